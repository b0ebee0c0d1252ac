! SPDX-License-Identifier: BSD-3-Clause
! la_mod.f90: the Fortran 2003 binding of the LA application API (libla/la.h).
!
! Built into libla (build/obj/fortran/la_mod.o, in libla.a and libla.so); the
! module file la_mod.mod is installed beside la.h. Compile with
! -I<prefix>/include and link with -lla (see docs/fortran.md).
!
! Modelled on Caliper's Fortran module: every C function has a private
! bind(C) interface and a thin public Fortran procedure; there is no logic
! here. What Fortran cannot do itself lives in C, in libla/fortran_shims.c:
! calling the static inline probes of la.h, turning 1-based indices into the
! 0-based indices of the C API, and copying blank-padded Fortran strings into
! NUL-terminated C strings. This module deliberately does no I/O and calls no
! libgfortran routine, so C programs linking libla.so need no libgfortran.
!
! Indices are 1-based, as Fortran mesh codes count: element e of
! la_start_probe(e) is element e-1 of LA_startProbe, cell (i,j,k) is C cell
! (i-1,j-1,k-1), range first is C range first-1. Element indices, counts and
! grid sizes may be default (32-bit) or 64-bit integers (generic interfaces).
!
! Error arguments. Every procedure that can fail in C takes an optional last
! argument ierr (integer, intent(out)): 0 or a negative LA_E* code, explained
! by la_strerror(ierr) and la_last_error(). It is optional because LA must
! never change what the application does (invariant 1 of docs/architecture.md): most codes
! ignore the result, and `call la_data_xfer()` should be all they write.
! The probes (la_start_probe, la_stop_probe, la_start_cell, la_stop_cell,
! la_start_cell_off, their channel forms and stops) take no ierr at all: they run once per element in the hot loop, their only
! failure is an index out of range, which libla counts (la_get_stat(
! LA_STAT_RANGE_ERRORS)) and describes (la_last_error()), and without ierr the
! generic name resolves straight to the C shim: one call, no Fortran wrapper,
! no present() test.
module la_mod
  use, intrinsic :: iso_c_binding, only: c_int, c_long, c_size_t, c_char, &
       c_ptr, c_bool, c_int32_t, c_int64_t, c_associated, &
       c_f_pointer, c_double, c_funptr, c_funloc, c_null_funptr, c_null_ptr
  implicit none
  private

  ! ---------------------------------------------------------- constants --
  ! Values mirror la.h (LA_ERRNO_MAP and the enums); tests/unit/test_fortran.c
  ! checks every one against the C definitions.
  integer, parameter, public :: LA_OK = 0
  integer, parameter, public :: LA_EINVAL = -1
  integer, parameter, public :: LA_ESTATE = -2
  integer, parameter, public :: LA_ENOAGENT = -3
  integer, parameter, public :: LA_EREFUSED = -4
  integer, parameter, public :: LA_EAGENTLOST = -5
  integer, parameter, public :: LA_EIPC = -6
  integer, parameter, public :: LA_ENOEVENT = -7
  integer, parameter, public :: LA_EPAPI = -8
  integer, parameter, public :: LA_ERANGE = -9
  integer, parameter, public :: LA_ENOMEM = -10
  integer, parameter, public :: LA_EDISABLED = -11
  integer, parameter, public :: LA_EPROTO = -12
  integer, parameter, public :: LA_EMSGSIZE = -13
  integer, parameter, public :: LA_ETRUNC = -14
  integer, parameter, public :: LA_ETIMEDOUT = -15
  integer, parameter, public :: LA_EIO = -16
  integer, parameter, public :: LA_EAUTH = -17
  integer, parameter, public :: LA_ENOTFOUND = -18
  integer, parameter, public :: LA_ELIMIT = -19
  integer, parameter, public :: LA_ECONFIG = -20
  integer, parameter, public :: LA_EVERSION = -21
  integer, parameter, public :: LA_ESKIPPED = -22

  integer, parameter, public :: LA_POLICY_WAIT = 0
  integer, parameter, public :: LA_POLICY_SKIP = 1

  integer, parameter, public :: LA_STAT_CYCLES = 0
  integer, parameter, public :: LA_STAT_PROFILED = 1
  integer, parameter, public :: LA_STAT_SKIPPED = 2
  integer, parameter, public :: LA_STAT_WAITS = 3
  integer, parameter, public :: LA_STAT_RANGE_ERRORS = 4
  integer, parameter, public :: LA_STAT_WAIT_NS = 5
  integer, parameter, public :: LA_STAT_REGISTERED = 6
  integer, parameter, public :: LA_STAT_TIMER_RES_NS = 7
  integer, parameter, public :: LA_STAT_FLAGGED = 8
  integer, parameter, public :: LA_STAT_INTERFERENCE_NS = 9
  integer, parameter, public :: LA_STAT_REREGISTERED = 10
  integer, parameter, public :: LA_STAT_REFUSED = 11
  integer, parameter, public :: LA_STAT_BEHIND = 12

  ! ------------------------------------------------------ public names --
  public :: la_register, la_register_grid, la_data_xfer, la_data_xfer_tagged
  public :: la_finalize
  public :: la_start_probe, la_stop_probe, la_start_cell, la_stop_cell
  public :: la_start_range, la_stop_range, la_is_profiling
  public :: la_set_period, la_set_metric, la_set_policy, la_set_buffers
  public :: la_set_agent, la_set_compaction, la_set_app_id
  public :: la_enable, la_disable
  public :: la_get_stat, la_strerror, la_last_error, la_app_id
  ! rows and boxes of grid cells (one measurement spread over them)
  public :: la_start_row, la_stop_row, la_start_box, la_stop_box

  ! ----------------------------------------------------- custom probes --
  ! la_set_probe_start_func(fn [, arg, ierr]) / la_set_probe_stop_func:
  ! LA_setProbeStartFunc / LA_setProbeStopFunc. fn is a function of the
  ! program with the interface la_probe_func (bind(C)): it gets the 1-based
  ! element and arg (type(c_ptr), c_null_ptr when absent) and returns a
  ! reading; the element accumulates stop - start. One function alone serves
  ! as both. Without fn: none. Setting one makes 'custom' the default
  ! metric; with the metric custom they may change while registered and
  ! take over at the next cycle boundary.
  public :: la_probe_func, la_set_probe_start_func, la_set_probe_stop_func
  abstract interface
    function la_probe_func(element, arg) bind(C) result(reading)
      import :: c_long, c_ptr, c_double
      integer(c_long), value :: element
      type(c_ptr), value :: arg
      real(c_double) :: reading
    end function
  end interface
  interface
    function c_la_set_probe_func(stop, fn, arg) &
         bind(C, name="la_f_set_probe_func") result(rc)
      import :: c_int, c_funptr, c_ptr
      integer(c_int), value :: stop
      type(c_funptr), value :: fn
      type(c_ptr), value :: arg
      integer(c_int) :: rc
    end function
  end interface

  ! ---------------------------------------------------------- channels --
  ! la_channel(name) declares a channel before la_register and returns its
  ! id, 1 for the first (a negative LA_E* code on error);
  ! la_start_probe_c(ch, e) / la_stop_probe_c(ch, e) probe element e in
  ! channel ch (ch a default integer, e of kind 4 or 8). la_start_probe
  ! probes channel 1. la_start_cell_c(ch, i, j, k) / la_stop_cell_c: cell
  ! (i,j,k) in channel ch (the grid's numbering, as la_start_cell);
  ! la_start_row_c(ch, j, k [, ierr]), la_start_box_c(ch, i0, j0, k0, ni,
  ! nj, nk [, ierr]) and their stops: rows and boxes in channel ch.
  integer, parameter, public :: LA_MAX_CHANNELS = 16
  public :: la_channel, la_start_probe_c, la_stop_probe_c
  public :: la_start_cell_c, la_stop_cell_c, la_start_row_c, la_stop_row_c
  public :: la_start_box_c, la_stop_box_c
  interface la_start_cell_c
    subroutine la_f_start_cell_c_i4(ch, i, j, k) &
        bind(C, name="la_f_start_cell_c_i4")
      import :: c_int32_t
      integer(c_int32_t), value :: ch, i, j, k
    end subroutine
    subroutine la_f_start_cell_c_i8(ch, i, j, k) &
        bind(C, name="la_f_start_cell_c_i8")
      import :: c_int32_t, c_int64_t
      integer(c_int32_t), value :: ch
      integer(c_int64_t), value :: i, j, k
    end subroutine
  end interface
  interface la_stop_cell_c
    subroutine la_f_stop_cell_c_i4(ch, i, j, k) &
        bind(C, name="la_f_stop_cell_c_i4")
      import :: c_int32_t
      integer(c_int32_t), value :: ch, i, j, k
    end subroutine
    subroutine la_f_stop_cell_c_i8(ch, i, j, k) &
        bind(C, name="la_f_stop_cell_c_i8")
      import :: c_int32_t, c_int64_t
      integer(c_int32_t), value :: ch
      integer(c_int64_t), value :: i, j, k
    end subroutine
  end interface
  interface la_start_row_c
    module procedure la_start_row_c_i4, la_start_row_c_i8
  end interface
  interface la_stop_row_c
    module procedure la_stop_row_c_i4, la_stop_row_c_i8
  end interface
  interface la_start_box_c
    module procedure la_start_box_c_i4, la_start_box_c_i8
  end interface
  interface la_stop_box_c
    module procedure la_stop_box_c_i4, la_stop_box_c_i8
  end interface
  interface
    function c_la_start_row_c(ch, j, k) bind(C, name="la_f_start_row_c") &
         result(rc)
      import :: c_int, c_long
      integer(c_int), value :: ch
      integer(c_long), value :: j, k
      integer(c_int) :: rc
    end function
    function c_la_stop_row_c(ch, j, k) bind(C, name="la_f_stop_row_c") &
         result(rc)
      import :: c_int, c_long
      integer(c_int), value :: ch
      integer(c_long), value :: j, k
      integer(c_int) :: rc
    end function
    function c_la_start_box_c(ch, i0, j0, k0, ni, nj, nk) &
         bind(C, name="la_f_start_box_c") result(rc)
      import :: c_int, c_long
      integer(c_int), value :: ch
      integer(c_long), value :: i0, j0, k0, ni, nj, nk
      integer(c_int) :: rc
    end function
    function c_la_stop_box_c(ch, i0, j0, k0, ni, nj, nk) &
         bind(C, name="la_f_stop_box_c") result(rc)
      import :: c_int, c_long
      integer(c_int), value :: ch
      integer(c_long), value :: i0, j0, k0, ni, nj, nk
      integer(c_int) :: rc
    end function
  end interface

  ! --------------------------------------------------- in-job weights --
  ! la_weights(w, tag, generation, ierr): LA_weights, the agent's newest
  ! weights of this rank's elements into w (w(e) for element e, size(w) at
  ! least the element count); tag and generation (integer(int64),
  ! optional) say which cycle and how many the agent has finished.
  ! la_weights_wait(w, after, timeout_ms, tag, generation, ierr):
  ! LA_weightsWait, waiting up to timeout_ms for a generation > after.
  public :: la_weights, la_weights_wait
  interface
    function c_la_weights_wait(w, n, after, timeout_ms, tag, gen) &
         bind(C, name="LA_weightsWait") result(rc)
      import :: c_int, c_long, c_int64_t, c_double
      real(c_double), dimension(*), intent(inout) :: w
      integer(c_long), value :: n
      integer(c_int64_t), value :: after
      integer(c_int), value :: timeout_ms
      integer(c_int64_t), intent(out) :: tag, gen
      integer(c_int) :: rc
    end function
  end interface

  interface la_start_probe_c
    subroutine la_f_start_probe_c_i4(ch, e) &
        bind(C, name="la_f_start_probe_c_i4")
      import :: c_int32_t
      integer(c_int32_t), value :: ch, e
    end subroutine
    subroutine la_f_start_probe_c_i8(ch, e) &
        bind(C, name="la_f_start_probe_c_i8")
      import :: c_int32_t, c_int64_t
      integer(c_int32_t), value :: ch
      integer(c_int64_t), value :: e
    end subroutine
  end interface

  interface la_stop_probe_c
    subroutine la_f_stop_probe_c_i4(ch, e) bind(C, name="la_f_stop_probe_c_i4")
      import :: c_int32_t
      integer(c_int32_t), value :: ch, e
    end subroutine
    subroutine la_f_stop_probe_c_i8(ch, e) bind(C, name="la_f_stop_probe_c_i8")
      import :: c_int32_t, c_int64_t
      integer(c_int32_t), value :: ch
      integer(c_int64_t), value :: e
    end subroutine
  end interface

  interface
    function c_la_channel(s, len) bind(C, name="la_f_channel") result(rc)
      import :: c_char, c_size_t, c_int
      character(kind=c_char), dimension(*), intent(in) :: s
      integer(c_size_t), value :: len
      integer(c_int) :: rc
    end function
  end interface

  ! ------------------------------------- the application's numbering --
  ! Global ids, a grid's place in the global grid, a grid registered with
  ! the program's own array bounds and a tile offset for tiled kernels
  ! (docs/fortran.md, "The application's numbering").
  public :: la_set_global_ids, la_set_grid_origin, la_register_grid_lb
  public :: la_set_tile_offset, la_start_cell_off, la_stop_cell_off
  ! la_start_cell_off(i, j, k, di, dj, dk) / la_stop_cell_off: cell
  ! (i+di, j+dj, k+dk) in the grid's numbering, the offset passed with
  ! each call (no thread state: safe in a parallel region opened inside a
  ! tiled kernel, where la_set_tile_offset holds only for the thread
  ! that called it). No ierr (hot path). All six of kind 4, or all of 8.
  interface la_start_cell_off
    subroutine la_f_start_cell_off_i4(i, j, k, di, dj, dk) &
        bind(C, name="la_f_start_cell_off_i4")
      import :: c_int32_t
      integer(c_int32_t), value :: i, j, k, di, dj, dk
    end subroutine
    subroutine la_f_start_cell_off_i8(i, j, k, di, dj, dk) &
        bind(C, name="la_f_start_cell_off_i8")
      import :: c_int64_t
      integer(c_int64_t), value :: i, j, k, di, dj, dk
    end subroutine
  end interface
  interface la_stop_cell_off
    subroutine la_f_stop_cell_off_i4(i, j, k, di, dj, dk) &
        bind(C, name="la_f_stop_cell_off_i4")
      import :: c_int32_t
      integer(c_int32_t), value :: i, j, k, di, dj, dk
    end subroutine
    subroutine la_f_stop_cell_off_i8(i, j, k, di, dj, dk) &
        bind(C, name="la_f_stop_cell_off_i8")
      import :: c_int64_t
      integer(c_int64_t), value :: i, j, k, di, dj, dk
    end subroutine
  end interface
  interface la_set_global_ids
    module procedure la_set_global_ids_i4, la_set_global_ids_i8
  end interface
  interface la_set_grid_origin
    module procedure la_set_grid_origin_i4, la_set_grid_origin_i8
  end interface
  interface la_register_grid_lb
    module procedure la_register_grid_lb_i4, la_register_grid_lb_i8
  end interface
  interface la_set_tile_offset
    module procedure la_set_tile_offset_i4, la_set_tile_offset_i8
  end interface
  interface
    function c_la_set_global_ids_i8(ids, n) bind(C, name="LA_setGlobalIds") &
         result(rc)
      import :: c_int, c_long, c_int64_t
      integer(c_int64_t), dimension(*), intent(in) :: ids
      integer(c_long), value :: n
      integer(c_int) :: rc
    end function
    function c_la_set_global_ids_i4(ids, n) &
         bind(C, name="la_f_set_global_ids_i4") result(rc)
      import :: c_int, c_long, c_int32_t
      integer(c_int32_t), dimension(*), intent(in) :: ids
      integer(c_long), value :: n
      integer(c_int) :: rc
    end function
    function c_la_set_grid_origin(first, glob) &
         bind(C, name="la_f_set_grid_origin") result(rc)
      import :: c_int, c_int64_t
      integer(c_int64_t), dimension(3), intent(in) :: first, glob
      integer(c_int) :: rc
    end function
    function c_la_register_grid_lb(name, len, rank, nprocs, lo, hi) &
         bind(C, name="la_f_register_grid_lb") result(rc)
      import :: c_char, c_size_t, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_size_t), value :: len
      integer(c_int), value :: rank, nprocs
      integer(c_int64_t), dimension(3), intent(in) :: lo, hi
      integer(c_int) :: rc
    end function
    subroutine c_la_set_tile_offset(di, dj, dk) &
         bind(C, name="la_f_set_tile_offset")
      import :: c_int64_t
      integer(c_int64_t), value :: di, dj, dk
    end subroutine
  end interface

  ! ------------------------------------------- hot path: straight to C --
  ! The specific procedures are the C shims themselves (private names).
  interface la_start_probe
    subroutine la_f_start_probe_i4(e) bind(C, name="la_f_start_probe_i4")
      import :: c_int32_t
      integer(c_int32_t), value :: e
    end subroutine
    subroutine la_f_start_probe_i8(e) bind(C, name="la_f_start_probe_i8")
      import :: c_int64_t
      integer(c_int64_t), value :: e
    end subroutine
  end interface

  interface la_stop_probe
    subroutine la_f_stop_probe_i4(e) bind(C, name="la_f_stop_probe_i4")
      import :: c_int32_t
      integer(c_int32_t), value :: e
    end subroutine
    subroutine la_f_stop_probe_i8(e) bind(C, name="la_f_stop_probe_i8")
      import :: c_int64_t
      integer(c_int64_t), value :: e
    end subroutine
  end interface

  interface la_start_cell
    subroutine la_f_start_cell_i4(i, j, k) bind(C, name="la_f_start_cell_i4")
      import :: c_int32_t
      integer(c_int32_t), value :: i, j, k
    end subroutine
    subroutine la_f_start_cell_i8(i, j, k) bind(C, name="la_f_start_cell_i8")
      import :: c_int64_t
      integer(c_int64_t), value :: i, j, k
    end subroutine
  end interface

  interface la_stop_cell
    subroutine la_f_stop_cell_i4(i, j, k) bind(C, name="la_f_stop_cell_i4")
      import :: c_int32_t
      integer(c_int32_t), value :: i, j, k
    end subroutine
    subroutine la_f_stop_cell_i8(i, j, k) bind(C, name="la_f_stop_cell_i8")
      import :: c_int64_t
      integer(c_int64_t), value :: i, j, k
    end subroutine
  end interface

  ! The specific names stay private by the module's default (an explicit
  ! private statement on a bind(C) name draws a gfortran warning).

  ! ---------------------------------- generic names over integer kinds --
  interface la_register
    module procedure la_register_i4, la_register_i8
  end interface
  interface la_register_grid
    module procedure la_register_grid_i4, la_register_grid_i8
  end interface
  interface la_start_range
    module procedure la_start_range_i4, la_start_range_i8
  end interface
  interface la_stop_range
    module procedure la_stop_range_i4, la_stop_range_i8
  end interface
  interface la_data_xfer_tagged
    module procedure la_data_xfer_tagged_i4, la_data_xfer_tagged_i8
  end interface
  interface la_start_row
    module procedure la_start_row_i4, la_start_row_i8
  end interface
  interface la_stop_row
    module procedure la_stop_row_i4, la_stop_row_i8
  end interface
  interface la_start_box
    module procedure la_start_box_i4, la_start_box_i8
  end interface
  interface la_stop_box
    module procedure la_stop_box_i4, la_stop_box_i8
  end interface

  ! ------------------------------------------ private C interfaces --
  interface
    function c_la_register(name, len, rank, nprocs, n) &
         bind(C, name="la_f_register") result(rc)
      import :: c_char, c_size_t, c_int, c_long
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_size_t), value :: len
      integer(c_int), value :: rank, nprocs
      integer(c_long), value :: n
      integer(c_int) :: rc
    end function

    function c_la_register_grid(name, len, rank, nprocs, nx, ny, nz) &
         bind(C, name="la_f_register_grid") result(rc)
      import :: c_char, c_size_t, c_int, c_long
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_size_t), value :: len
      integer(c_int), value :: rank, nprocs
      integer(c_long), value :: nx, ny, nz
      integer(c_int) :: rc
    end function

    function c_la_data_xfer() bind(C, name="LA_dataXfer") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function

    function c_la_data_xfer_tagged(tag) bind(C, name="LA_dataXferTagged") &
         result(rc)
      import :: c_int, c_int64_t
      integer(c_int64_t), value :: tag ! uint64_t in C
      integer(c_int) :: rc
    end function

    function c_la_finalize() bind(C, name="LA_finalize") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function

    function c_la_start_range(first, count) bind(C, name="la_f_start_range") &
         result(rc)
      import :: c_int, c_long
      integer(c_long), value :: first, count
      integer(c_int) :: rc
    end function

    function c_la_stop_range(first, count) bind(C, name="la_f_stop_range") &
         result(rc)
      import :: c_int, c_long
      integer(c_long), value :: first, count
      integer(c_int) :: rc
    end function

    function c_la_start_row(j, k) bind(C, name="la_f_start_row") result(rc)
      import :: c_int, c_long
      integer(c_long), value :: j, k
      integer(c_int) :: rc
    end function

    function c_la_stop_row(j, k) bind(C, name="la_f_stop_row") result(rc)
      import :: c_int, c_long
      integer(c_long), value :: j, k
      integer(c_int) :: rc
    end function

    function c_la_start_box(i0, j0, k0, ni, nj, nk) &
         bind(C, name="la_f_start_box") result(rc)
      import :: c_int, c_long
      integer(c_long), value :: i0, j0, k0, ni, nj, nk
      integer(c_int) :: rc
    end function

    function c_la_stop_box(i0, j0, k0, ni, nj, nk) &
         bind(C, name="la_f_stop_box") result(rc)
      import :: c_int, c_long
      integer(c_long), value :: i0, j0, k0, ni, nj, nk
      integer(c_int) :: rc
    end function

    function c_la_set_period(period) bind(C, name="LA_setPeriod") result(rc)
      import :: c_int
      integer(c_int), value :: period
      integer(c_int) :: rc
    end function

    function c_la_set_policy(policy) bind(C, name="LA_setPolicy") result(rc)
      import :: c_int
      integer(c_int), value :: policy
      integer(c_int) :: rc
    end function

    function c_la_set_buffers(n) bind(C, name="LA_setBuffers") result(rc)
      import :: c_int
      integer(c_int), value :: n
      integer(c_int) :: rc
    end function

    function c_la_set_metric(s, len) bind(C, name="la_f_set_metric") result(rc)
      import :: c_char, c_size_t, c_int
      character(kind=c_char), dimension(*), intent(in) :: s
      integer(c_size_t), value :: len
      integer(c_int) :: rc
    end function

    function c_la_set_agent(s, len) bind(C, name="la_f_set_agent") result(rc)
      import :: c_char, c_size_t, c_int
      character(kind=c_char), dimension(*), intent(in) :: s
      integer(c_size_t), value :: len
      integer(c_int) :: rc
    end function

    function c_la_set_compaction(s, len) bind(C, name="la_f_set_compaction") &
         result(rc)
      import :: c_char, c_size_t, c_int
      character(kind=c_char), dimension(*), intent(in) :: s
      integer(c_size_t), value :: len
      integer(c_int) :: rc
    end function

    function c_la_set_app_id(s, len) bind(C, name="la_f_set_app_id") result(rc)
      import :: c_char, c_size_t, c_int
      character(kind=c_char), dimension(*), intent(in) :: s
      integer(c_size_t), value :: len
      integer(c_int) :: rc
    end function

    function c_la_enable() bind(C, name="LA_enable") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function

    function c_la_disable() bind(C, name="LA_disable") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function

    function c_la_is_profiling() bind(C, name="la_f_is_profiling") result(on)
      import :: c_bool
      logical(c_bool) :: on
    end function

    function c_la_get_stat(which) bind(C, name="LA_getStat") result(v)
      import :: c_int, c_long
      integer(c_int), value :: which
      integer(c_long) :: v
    end function

    function c_la_strerror(code) bind(C, name="LA_strerror") result(p)
      import :: c_int, c_ptr
      integer(c_int), value :: code
      type(c_ptr) :: p
    end function

    function c_la_last_error() bind(C, name="LA_lastError") result(p)
      import :: c_ptr
      type(c_ptr) :: p
    end function

    function c_la_app_id() bind(C, name="LA_appId") result(p)
      import :: c_ptr
      type(c_ptr) :: p
    end function

    function c_strlen(p) bind(C, name="strlen") result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t) :: n
    end function
  end interface

contains

  ! ---------------------------------------------------------- lifecycle --

  ! la_register: LA_register. rank and nprocs may be -1 (read from the
  ! launcher's environment); elements are then probed as 1..n_elements.
  subroutine la_register_i4(app_name, rank, nprocs, n_elements, ierr)
    character(len=*), intent(in) :: app_name
    integer, intent(in) :: rank, nprocs
    integer(c_int32_t), intent(in) :: n_elements
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_register(app_name, len(app_name, kind=c_size_t), &
         int(rank, c_int), int(nprocs, c_int), int(n_elements, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_register_i8(app_name, rank, nprocs, n_elements, ierr)
    character(len=*), intent(in) :: app_name
    integer, intent(in) :: rank, nprocs
    integer(c_int64_t), intent(in) :: n_elements
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_register(app_name, len(app_name, kind=c_size_t), &
         int(rank, c_int), int(nprocs, c_int), int(n_elements, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! la_register_grid: LA_registerGrid; cells are then probed as (i,j,k),
  ! 1 <= i <= nx, 1 <= j <= ny, 1 <= k <= nz.
  subroutine la_register_grid_i4(app_name, rank, nprocs, nx, ny, nz, ierr)
    character(len=*), intent(in) :: app_name
    integer, intent(in) :: rank, nprocs
    integer(c_int32_t), intent(in) :: nx, ny, nz
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_register_grid(app_name, len(app_name, kind=c_size_t), &
         int(rank, c_int), int(nprocs, c_int), int(nx, c_long), &
         int(ny, c_long), int(nz, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_register_grid_i8(app_name, rank, nprocs, nx, ny, nz, ierr)
    character(len=*), intent(in) :: app_name
    integer, intent(in) :: rank, nprocs
    integer(c_int64_t), intent(in) :: nx, ny, nz
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_register_grid(app_name, len(app_name, kind=c_size_t), &
         int(rank, c_int), int(nprocs, c_int), int(nx, c_long), &
         int(ny, c_long), int(nz, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! la_data_xfer: LA_dataXfer, the end of a profiling cycle.
  subroutine la_data_xfer(ierr)
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_data_xfer()
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! la_data_xfer_tagged: LA_dataXferTagged; tag must be >= 0 and the same on
  ! every rank for the same cycle.
  subroutine la_data_xfer_tagged_i4(tag, ierr)
    integer(c_int32_t), intent(in) :: tag
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_data_xfer_tagged(int(tag, c_int64_t))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_data_xfer_tagged_i8(tag, ierr)
    integer(c_int64_t), intent(in) :: tag
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_data_xfer_tagged(tag)
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! la_finalize: LA_finalize; removes the shared memory and semaphores.
  subroutine la_finalize(ierr)
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_finalize()
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! ------------------------------------------------------------- ranges --
  ! la_start_range/la_stop_range: LA_startRange/LA_stopRange over elements
  ! first..first+count-1 (1-based). Once per block, not per element, so they
  ! keep the optional ierr (LA_ERANGE, or LA_ESTATE for a stop without start).

  subroutine la_start_range_i4(first, count, ierr)
    integer(c_int32_t), intent(in) :: first, count
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_start_range(int(first, c_long), int(count, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_start_range_i8(first, count, ierr)
    integer(c_int64_t), intent(in) :: first, count
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_start_range(int(first, c_long), int(count, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_stop_range_i4(first, count, ierr)
    integer(c_int32_t), intent(in) :: first, count
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_stop_range(int(first, c_long), int(count, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_stop_range_i8(first, count, ierr)
    integer(c_int64_t), intent(in) :: first, count
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_stop_range(int(first, c_long), int(count, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! ----------------------------------------------------- rows and boxes --
  ! la_start_row(j, k)/la_stop_row(j, k): LA_startRow/LA_stopRow, one
  ! measurement spread over the nx cells of row (j, k) of a grid
  ! (la_register_grid). la_start_box(i0, j0, k0, ni, nj, nk)/la_stop_box:
  ! LA_startBox/LA_stopBox over cells i0..i0+ni-1, j0..j0+nj-1,
  ! k0..k0+nk-1. Indices as la_start_cell's: the array's bounds
  ! (la_register_grid_lb) and the thread's tile offset apply. Once per row or box, so they keep the optional ierr
  ! (LA_ERANGE outside the grid, LA_ESTATE without a grid or for a stop
  ! without a start); they do not nest with each other or with ranges.

  subroutine la_start_row_i8(j, k, ierr)
    integer(c_int64_t), intent(in) :: j, k
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_start_row(int(j, c_long), int(k, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_stop_row_i8(j, k, ierr)
    integer(c_int64_t), intent(in) :: j, k
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_stop_row(int(j, c_long), int(k, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_start_box_i8(i0, j0, k0, ni, nj, nk, ierr)
    integer(c_int64_t), intent(in) :: i0, j0, k0, ni, nj, nk
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_start_box(int(i0, c_long), int(j0, c_long), int(k0, c_long), &
         int(ni, c_long), int(nj, c_long), int(nk, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_stop_box_i8(i0, j0, k0, ni, nj, nk, ierr)
    integer(c_int64_t), intent(in) :: i0, j0, k0, ni, nj, nk
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_stop_box(int(i0, c_long), int(j0, c_long), int(k0, c_long), &
         int(ni, c_long), int(nj, c_long), int(nk, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! Rows and boxes in channel ch (1-based, a default integer).
  subroutine la_start_row_c_i8(ch, j, k, ierr)
    integer, intent(in) :: ch
    integer(c_int64_t), intent(in) :: j, k
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_start_row_c(int(ch, c_int), int(j, c_long), int(k, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_stop_row_c_i8(ch, j, k, ierr)
    integer, intent(in) :: ch
    integer(c_int64_t), intent(in) :: j, k
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_stop_row_c(int(ch, c_int), int(j, c_long), int(k, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_start_box_c_i8(ch, i0, j0, k0, ni, nj, nk, ierr)
    integer, intent(in) :: ch
    integer(c_int64_t), intent(in) :: i0, j0, k0, ni, nj, nk
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_start_box_c(int(ch, c_int), int(i0, c_long), int(j0, c_long), &
         int(k0, c_long), int(ni, c_long), int(nj, c_long), int(nk, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_stop_box_c_i8(ch, i0, j0, k0, ni, nj, nk, ierr)
    integer, intent(in) :: ch
    integer(c_int64_t), intent(in) :: i0, j0, k0, ni, nj, nk
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_stop_box_c(int(ch, c_int), int(i0, c_long), int(j0, c_long), &
         int(k0, c_long), int(ni, c_long), int(nj, c_long), int(nk, c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_start_row_c_i4(ch, j, k, ierr)
    integer, intent(in) :: ch
    integer(c_int32_t), intent(in) :: j, k
    integer, intent(out), optional :: ierr
    call la_start_row_c_i8(ch, int(j, c_int64_t), int(k, c_int64_t), ierr)
  end subroutine

  subroutine la_stop_row_c_i4(ch, j, k, ierr)
    integer, intent(in) :: ch
    integer(c_int32_t), intent(in) :: j, k
    integer, intent(out), optional :: ierr
    call la_stop_row_c_i8(ch, int(j, c_int64_t), int(k, c_int64_t), ierr)
  end subroutine

  subroutine la_start_box_c_i4(ch, i0, j0, k0, ni, nj, nk, ierr)
    integer, intent(in) :: ch
    integer(c_int32_t), intent(in) :: i0, j0, k0, ni, nj, nk
    integer, intent(out), optional :: ierr
    call la_start_box_c_i8(ch, int(i0, c_int64_t), int(j0, c_int64_t), &
         int(k0, c_int64_t), int(ni, c_int64_t), int(nj, c_int64_t), &
         int(nk, c_int64_t), ierr)
  end subroutine

  subroutine la_stop_box_c_i4(ch, i0, j0, k0, ni, nj, nk, ierr)
    integer, intent(in) :: ch
    integer(c_int32_t), intent(in) :: i0, j0, k0, ni, nj, nk
    integer, intent(out), optional :: ierr
    call la_stop_box_c_i8(ch, int(i0, c_int64_t), int(j0, c_int64_t), &
         int(k0, c_int64_t), int(ni, c_int64_t), int(nj, c_int64_t), &
         int(nk, c_int64_t), ierr)
  end subroutine

  ! The default-integer forms widen and call the 64-bit ones (an absent
  ! ierr stays absent).
  subroutine la_start_row_i4(j, k, ierr)
    integer(c_int32_t), intent(in) :: j, k
    integer, intent(out), optional :: ierr
    call la_start_row_i8(int(j, c_int64_t), int(k, c_int64_t), ierr)
  end subroutine

  subroutine la_stop_row_i4(j, k, ierr)
    integer(c_int32_t), intent(in) :: j, k
    integer, intent(out), optional :: ierr
    call la_stop_row_i8(int(j, c_int64_t), int(k, c_int64_t), ierr)
  end subroutine

  subroutine la_start_box_i4(i0, j0, k0, ni, nj, nk, ierr)
    integer(c_int32_t), intent(in) :: i0, j0, k0, ni, nj, nk
    integer, intent(out), optional :: ierr
    call la_start_box_i8(int(i0, c_int64_t), int(j0, c_int64_t), &
         int(k0, c_int64_t), int(ni, c_int64_t), int(nj, c_int64_t), &
         int(nk, c_int64_t), ierr)
  end subroutine

  subroutine la_stop_box_i4(i0, j0, k0, ni, nj, nk, ierr)
    integer(c_int32_t), intent(in) :: i0, j0, k0, ni, nj, nk
    integer, intent(out), optional :: ierr
    call la_stop_box_i8(int(i0, c_int64_t), int(j0, c_int64_t), &
         int(k0, c_int64_t), int(ni, c_int64_t), int(nj, c_int64_t), &
         int(nk, c_int64_t), ierr)
  end subroutine

  ! ----------------------------------------------------------- settings --
  ! Call before la_register unless la.h says otherwise; an LA_* environment
  ! variable overrides the program's choice.

  subroutine la_set_period(period, ierr)
    integer, intent(in) :: period
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_set_period(int(period, c_int))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_set_policy(policy, ierr)
    integer, intent(in) :: policy
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_set_policy(int(policy, c_int))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_set_buffers(n_buffers, ierr)
    integer, intent(in) :: n_buffers
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_set_buffers(int(n_buffers, c_int))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_set_metric(metric, ierr)
    character(len=*), intent(in) :: metric
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_set_metric(metric, len(metric, kind=c_size_t))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_set_agent(host_port, ierr)
    character(len=*), intent(in) :: host_port
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_set_agent(host_port, len(host_port, kind=c_size_t))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_set_compaction(spec, ierr)
    character(len=*), intent(in) :: spec
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_set_compaction(spec, len(spec, kind=c_size_t))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_set_app_id(app_id, ierr)
    character(len=*), intent(in) :: app_id
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_set_app_id(app_id, len(app_id, kind=c_size_t))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! la_enable/la_disable: profiling on/off, from the next cycle.
  subroutine la_enable(ierr)
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_enable()
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_disable(ierr)
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_disable()
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! ------------------------------------------------------------ queries --

  ! la_is_profiling: whether the current cycle is profiled (LA_isProfiling),
  ! as a default logical so that it can be passed anywhere a logical goes.
  ! Constant within a cycle: test it once per time step and run a loop
  ! without probes when it is false (the loop then vectorises; see
  ! docs/fortran.md, "Unprofiled steps at full speed").
  function la_is_profiling() result(on)
    logical :: on
    on = c_la_is_profiling()
  end function

  ! la_get_stat: LA_getStat(which), which one of LA_STAT_*; LA_EINVAL for an
  ! unknown which.
  function la_get_stat(which) result(v)
    integer, intent(in) :: which
    integer(c_int64_t) :: v
    v = int(c_la_get_stat(int(which, c_int)), c_int64_t)
  end function

  ! la_strerror: the text of an error code (LA_strerror).
  function la_strerror(code) result(s)
    integer, intent(in) :: code
    character(len=:), allocatable :: s
    call la__f_string(c_la_strerror(int(code, c_int)), s)
  end function

  ! la_last_error: the detail of the most recent failure (LA_lastError).
  function la_last_error() result(s)
    character(len=:), allocatable :: s
    call la__f_string(c_la_last_error(), s)
  end function

  ! la_app_id: the application id of the registration (LA_appId).
  function la_app_id() result(s)
    character(len=:), allocatable :: s
    call la__f_string(c_la_app_id(), s)
  end function

  ! la_channel: declares channel `name` (before la_register); its id from 1,
  ! or a negative LA_E* code (LA_EINVAL, LA_ELIMIT, LA_ESTATE).
  integer function la_channel(name)
    character(len=*), intent(in) :: name
    la_channel = int(c_la_channel(name, len(name, kind=c_size_t)))
  end function

  ! ------------------------------------- the application's numbering --

  ! la_set_global_ids: LA_setGlobalIds(ids, size(ids)): ids(e) is the
  ! global id (>= 0) of element e; call before la_register. The array is
  ! copied. An empty array forgets the ids.
  subroutine la_set_global_ids_i4(ids, ierr)
    integer(c_int32_t), dimension(:), contiguous, intent(in) :: ids
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_set_global_ids_i4(ids, int(size(ids), c_long))
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_set_global_ids_i8(ids, ierr)
    integer(c_int64_t), dimension(:), contiguous, intent(in) :: ids
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    if (size(ids) == 0) then
      rc = c_la_set_global_ids_i4([integer(c_int32_t) ::], 0_c_long)
    else
      rc = c_la_set_global_ids_i8(ids, int(size(ids), c_long))
    end if
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! la_set_grid_origin: for the next grid registration: this rank's first
  ! cell is cell first(1:3) (1-based) of a global grid of
  ! glob(1)*glob(2)*glob(3) cells (LA_setGridOrigin).
  subroutine la_set_grid_origin_i4(first, glob, ierr)
    integer(c_int32_t), dimension(3), intent(in) :: first, glob
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    integer(c_int64_t) :: f(3), g(3)
    f = int(first, c_int64_t)
    g = int(glob, c_int64_t)
    rc = c_la_set_grid_origin(f, g)
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_set_grid_origin_i8(first, glob, ierr)
    integer(c_int64_t), dimension(3), intent(in) :: first, glob
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_set_grid_origin(first, glob)
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! la_register_grid_lb: la_register_grid of the cells of an array declared
  ! a(lo(1):hi(1), lo(2):hi(2), lo(3):hi(3)), e.g. lo = [x_min-2, ...]:
  ! la_start_cell(i, j, k) then takes the program's own indices.
  subroutine la_register_grid_lb_i4(app_name, rank, nprocs, lo, hi, ierr)
    character(len=*), intent(in) :: app_name
    integer, intent(in) :: rank, nprocs
    integer(c_int32_t), dimension(3), intent(in) :: lo, hi
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    integer(c_int64_t) :: l(3), h(3)
    l = int(lo, c_int64_t)
    h = int(hi, c_int64_t)
    rc = c_la_register_grid_lb(app_name, len(app_name, kind=c_size_t), &
         int(rank, c_int), int(nprocs, c_int), l, h)
    if (present(ierr)) ierr = int(rc)
  end subroutine

  subroutine la_register_grid_lb_i8(app_name, rank, nprocs, lo, hi, ierr)
    character(len=*), intent(in) :: app_name
    integer, intent(in) :: rank, nprocs
    integer(c_int64_t), dimension(3), intent(in) :: lo, hi
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_la_register_grid_lb(app_name, len(app_name, kind=c_size_t), &
         int(rank, c_int), int(nprocs, c_int), lo, hi)
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! la_set_tile_offset: the calling thread's later la_start_cell(i, j, k)
  ! probe cell (i+di, j+dj, k+dk) (rows and boxes likewise): a tiled
  ! kernel whose loops run over tile-local indices sets its tile's offset
  ! once per tile. 0,0,0: none. Per thread: a thread that never called it
  ! while another thread has a non-zero offset has its probes refused
  ! (a range error naming la_set_tile_offset); la_start_cell_off needs
  ! no thread state.
  subroutine la_set_tile_offset_i4(di, dj, dk)
    integer(c_int32_t), intent(in) :: di, dj, dk
    call c_la_set_tile_offset(int(di, c_int64_t), int(dj, c_int64_t), &
         int(dk, c_int64_t))
  end subroutine

  subroutine la_set_tile_offset_i8(di, dj, dk)
    integer(c_int64_t), intent(in) :: di, dj, dk
    call c_la_set_tile_offset(di, dj, dk)
  end subroutine

  ! ----------------------------------------------------- custom probes --

  ! la_set_probe_start_func: see the public list above.
  subroutine la_set_probe_start_func(fn, arg, ierr)
    procedure(la_probe_func), optional :: fn
    type(c_ptr), intent(in), optional :: arg
    integer, intent(out), optional :: ierr
    call la__f_set_probe(0_c_int, fn, arg, ierr)
  end subroutine

  ! la_set_probe_stop_func: see the public list above.
  subroutine la_set_probe_stop_func(fn, arg, ierr)
    procedure(la_probe_func), optional :: fn
    type(c_ptr), intent(in), optional :: arg
    integer, intent(out), optional :: ierr
    call la__f_set_probe(1_c_int, fn, arg, ierr)
  end subroutine

  subroutine la__f_set_probe(stop, fn, arg, ierr)
    integer(c_int), intent(in) :: stop
    procedure(la_probe_func), optional :: fn
    type(c_ptr), intent(in), optional :: arg
    integer, intent(out), optional :: ierr
    type(c_funptr) :: f
    type(c_ptr) :: a
    integer(c_int) :: rc
    f = c_null_funptr
    a = c_null_ptr
    if (present(fn)) f = c_funloc(fn)
    if (present(arg)) a = arg
    rc = c_la_set_probe_func(stop, f, a)
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! ---------------------------------------------------- in-job weights --

  ! la_weights: see the public list above (LA_weights in la.h).
  subroutine la_weights(w, tag, generation, ierr)
    real(c_double), dimension(:), contiguous, intent(inout) :: w
    integer(c_int64_t), intent(out), optional :: tag, generation
    integer, intent(out), optional :: ierr
    call la_weights_wait(w, 0_c_int64_t, 0, tag, generation, ierr)
  end subroutine

  ! la_weights_wait: see the public list above (LA_weightsWait in la.h);
  ! with timeout_ms 0 it is la_weights with a floor on the generation.
  subroutine la_weights_wait(w, after, timeout_ms, tag, generation, ierr)
    real(c_double), dimension(:), contiguous, intent(inout) :: w
    integer(c_int64_t), intent(in) :: after
    integer, intent(in) :: timeout_ms
    integer(c_int64_t), intent(out), optional :: tag, generation
    integer, intent(out), optional :: ierr
    integer(c_int64_t) :: t, g
    integer(c_int) :: rc
    t = 0
    g = 0
    rc = c_la_weights_wait(w, int(size(w), c_long), after, &
         int(timeout_ms, c_int), t, g)
    if (present(tag)) tag = t
    if (present(generation)) generation = g
    if (present(ierr)) ierr = int(rc)
  end subroutine

  ! s = a copy of the NUL-terminated C string p (empty for a null pointer).
  ! Allocates with stat= so that no libgfortran error routine is linked in;
  ! the strings are a few hundred bytes at most.
  subroutine la__f_string(p, s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable, intent(out) :: s
    character(kind=c_char), pointer :: a(:)
    integer :: i, n, st
    n = 0
    if (c_associated(p)) n = int(c_strlen(p))
    allocate(character(len=n) :: s, stat=st)
    if (st /= 0 .or. n == 0) return
    call c_f_pointer(p, a, [n])
    do i = 1, n
      s(i:i) = a(i)
    end do
  end subroutine

end module la_mod

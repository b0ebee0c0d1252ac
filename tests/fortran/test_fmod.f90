! SPDX-License-Identifier: BSD-3-Clause
! test_fmod.f90: a Fortran program that uses la_mod the way a mesh code does,
! and checks what it can see from Fortran. Run by tests/unit/test_fortran.c,
! which checks the rest (the values that reached the real daemons' store).
!
! The agent address comes from LA_AGENT. With an agent the program profiles:
!   phase 1, 12 elements: cycles 1-3 probe elements 1, 3 and 10 and the range
!     5..6 (C indices 0, 2, 9, 4, 5); cycle 1 also makes 3 range errors
!     (element 0 twice, a range past the end); cycle 3 ends with tag 1000 and
!     la_disable, so cycle 4 is not profiled (its probe of element 2 must not
!     appear anywhere); la_enable makes cycle 5 (tag 4) profile element 12.
!   phase 2, a 4x3x2 grid under its own application id fmod-grid.1 (a
!     second run of rank 0, stored apart from phase 1): one cycle probing cells (2,1,1) and (4,3,2) (C
!     indices 1 and 23), cell (5,1,1), out of range (2 range errors), row
!     (2,1) (C 4..7) and the box (1..2, 1..2, 2) (C 12, 13, 16, 17); then
!     period 2: cycle 2 is not profiled (la_is_profiling false, rows are
!     no-ops), cycle 3 is, and ends with la_finalize, unsent.
! Without an agent la_register fails and every call must be a no-op.
!
! Mode numbering instead runs phase 3, the application's numbering:
!   fmod-ids.1: 12 elements with 32-bit global ids 100*e, one cycle probing
!     element 1;
!   fmod-lb.1: the array a(-1:4, 0:3, 2:3) (6x4x2 cells) registered with its
!     bounds, first cell (11,1,1) of a 20x4x2 global grid; one cycle
!     probing cells (-1,0,2) and (4,3,3) (C 0 and 47) in the program's
!     indices, then, with tile offset (2,1,0), tile-local cell (0,0,2)
!     (program (2,1,2), C 9); row (2,3) (C row (2,1), cells 36..41) and,
!     with tile offset (1,0,0), the box (-1..0, 0, 2) (program (0..1,0,2),
!     C 1 and 2): rows and boxes in the program's indices too.
!
! Mode probes runs custom probe functions (subroutine probes below).
!
! Usage: test_fmod [agent|noagent|codes|numbering|probes]
!   agent    fail unless the registrations succeed
!   noagent  fail unless la_register returns LA_ENOAGENT
!   codes    print every la_mod constant as "NAME VALUE" and exit
! Exit status 0 on success; error stop (non-zero) on a wrong result.
! Probe functions for mode probes: bind(C) with la_mod's la_probe_func
! interface (a module, since internal procedures cannot be bind(C)).
module fmod_probes
  use, intrinsic :: iso_c_binding, only: c_long, c_ptr, c_double, &
       c_associated, c_f_pointer
  implicit none
contains
  ! start reading: 0
  function zero_probe(element, arg) bind(C) result(reading)
    integer(c_long), value :: element
    type(c_ptr), value :: arg
    real(c_double) :: reading
    reading = 0
    if (element < 1 .or. c_associated(arg)) reading = -1  ! not expected
  end function
  ! stop reading: element * scale, scale the real(c_double) arg points to
  function scaled_probe(element, arg) bind(C) result(reading)
    integer(c_long), value :: element
    type(c_ptr), value :: arg
    real(c_double) :: reading
    real(c_double), pointer :: scale
    reading = -1
    if (.not. c_associated(arg)) return
    call c_f_pointer(arg, scale)
    reading = real(element, c_double) * scale
  end function
  ! stop reading: element * 1000, no argument
  function kilo_probe(element, arg) bind(C) result(reading)
    integer(c_long), value :: element
    type(c_ptr), value :: arg
    real(c_double) :: reading
    reading = real(element, c_double) * 1000
    if (c_associated(arg)) reading = -1
  end function
end module fmod_probes

program test_fmod
  use, intrinsic :: iso_fortran_env, only: int64
  use, intrinsic :: iso_c_binding, only: c_double, c_loc
  use la_mod
  use fmod_probes
  implicit none
  character(len=16) :: mode
  character(len=256) :: agent
  character(len=12) :: name = 'fmodtest'  ! blank padded on purpose
  character(len=:), allocatable :: msg
  integer :: ierr, alen, st, c
  logical :: reg
  real(8) :: sink = 0d0
  real(8) :: wts(12), small(11)
  integer(int64) :: wtag, wgen

  mode = ''
  if (command_argument_count() >= 1) call get_command_argument(1, mode)
  if (mode == 'codes') then
    call print_codes()
    stop
  end if
  if (mode == 'numbering') then
    call numbering()
    stop
  end if
  if (mode == 'probes') then
    call probes()
    stop
  end if

  ! ------------------------------------------------------------ settings
  call get_environment_variable('LA_AGENT', agent, alen, st)
  if (st == 0 .and. alen > 0) then
    call la_set_agent(agent(1:alen), ierr)
    call check(ierr == LA_OK, 'la_set_agent')
  end if
  call la_set_period(0, ierr)
  call check(ierr == LA_EINVAL, 'la_set_period(0) must fail with LA_EINVAL')
  msg = la_last_error()
  call check(index(msg, la_strerror(LA_EINVAL)) == 1, &
       'la_last_error starts with la_strerror(LA_EINVAL)')
  print '(a,a)', 'fmod: last error: ', msg
  call la_set_period(1, ierr)
  call check(ierr == LA_OK, 'la_set_period(1)')
  call la_set_policy(7, ierr)
  call check(ierr == LA_EINVAL, 'la_set_policy(7) must fail')
  call la_set_policy(LA_POLICY_WAIT, ierr)
  call check(ierr == LA_OK, 'la_set_policy')
  call la_set_buffers(2, ierr)
  call check(ierr == LA_OK, 'la_set_buffers')
  call la_set_metric('time      ', ierr)
  call check(ierr == LA_OK, 'la_set_metric')
  call la_set_compaction('   ', ierr)
  call check(ierr == LA_OK, 'la_set_compaction')
  call la_set_app_id('fmod-app.1   ', ierr)
  call check(ierr == LA_OK, 'la_set_app_id')
  call check(la_strerror(LA_OK) == 'success', 'la_strerror(0)')
  call check(la_strerror(LA_ENOAGENT) == 'no LA agent reachable', &
       'la_strerror(LA_ENOAGENT)')
  call check(len(la_strerror(LA_ENOAGENT)) == 21, 'string length')

  ! ----------------------------------------------- phase 1: 12 elements
  ! two channels: 'main' (the plain probes) and 'aux'
  call check(la_channel('main  ') == 1, 'la_channel: main is channel 1')
  call check(la_channel('aux') == 2, 'la_channel: aux is channel 2')
  call check(la_channel('aux') == LA_EINVAL, 'la_channel: duplicate name')
  call check(la_channel('a b') == LA_EINVAL, 'la_channel: name with a space')
  call la_register(name, 0, 1, 12, ierr)
  print '(a,i0,a,a)', 'fmod: la_register ierr=', ierr, ' ', la_strerror(ierr)
  if (ierr /= LA_OK) print '(a,a)', 'fmod: ', la_last_error()
  reg = ierr == LA_OK
  if (mode == 'agent') call check(reg, 'expected la_register to succeed')
  if (mode == 'noagent') call check(ierr == LA_ENOAGENT, &
       'expected la_register to fail with LA_ENOAGENT')
  call check(la_channel('late') == LA_ESTATE, 'la_channel after la_register')
  if (reg) then
    call check(la_app_id() == 'fmod-app.1', 'la_app_id')
    call check(la_get_stat(LA_STAT_REGISTERED) == 1, 'registered')
  else
    call check(la_get_stat(LA_STAT_REGISTERED) == 0, 'not registered')
  end if

  do c = 1, 3
    call check(la_is_profiling() .eqv. reg, 'la_is_profiling, cycles 1-3')
    call la_start_probe(1)
    call work(200)
    call la_stop_probe(1)
    call la_start_probe(3)
    call work(300)
    call la_stop_probe(3)
    call la_start_probe_c(2, 3)          ! element 3 again, channel aux
    call work(100)
    call la_stop_probe_c(2, 3)
    call la_start_probe(10_int64)
    call work(100)
    call la_stop_probe(10_int64)
    call la_start_probe_c(1, 10_int64)   ! channel main = la_start_probe
    call work(100)
    call la_stop_probe_c(1, 10_int64)
    call la_start_range(5, 2, ierr)
    call check(ierr == LA_OK, 'la_start_range')
    call work(400)
    call la_stop_range(5, 2, ierr)
    call check(ierr == LA_OK, 'la_stop_range')
    if (c == 1) then
      call la_start_probe(0)   ! out of range: C index -1
      call la_stop_probe(0)
      call la_start_range(12_int64, 2_int64, ierr)
      if (reg) then
        call check(ierr == LA_ERANGE, 'range past the end gives LA_ERANGE')
      else
        call check(ierr == LA_OK, 'ranges are no-ops when not registered')
      end if
    end if
    select case (c)
    case (1)
      call la_data_xfer(ierr)
    case (2)
      call la_data_xfer()       ! ierr is optional
      ierr = LA_OK
    case (3)
      call la_disable(ierr)
      call check(ierr == LA_OK, 'la_disable')
      call la_data_xfer_tagged(1000_int64, ierr)
    end select
    call check(ierr == LA_OK, 'la_data_xfer')
  end do

  ! cycle 4: disabled
  call check(.not. la_is_profiling(), 'not profiling after la_disable')
  call la_start_probe(2)
  call work(100)
  call la_stop_probe(2)
  call la_enable(ierr)
  call check(ierr == LA_OK, 'la_enable')
  call la_data_xfer_tagged(7, ierr)
  call check(ierr == LA_OK, 'la_data_xfer_tagged (cycle 4)')

  ! cycle 5: enabled again
  call check(la_is_profiling() .eqv. reg, 'profiling again after la_enable')
  call la_start_probe(12)
  call work(100)
  call la_stop_probe(12)
  call la_data_xfer(ierr)
  call check(ierr == LA_OK, 'la_data_xfer (cycle 5)')

  ! the agent's weights back in the job (la_weights): after the profiled
  ! cycles there is a generation; a buffer too small is refused
  call la_weights_wait(wts, 0_int64, 15000, wtag, wgen, ierr)
  if (reg) then
    call check(ierr == LA_OK, 'la_weights_wait')
    call check(wgen >= 1, 'la_weights_wait: a generation')
    call check(all(wts == wts), 'la_weights_wait: weights are numbers')
    call la_weights(wts, wtag, wgen, ierr)
    call check(ierr == LA_OK .and. wgen >= 1, 'la_weights')
    call la_weights(small, ierr=ierr)
    call check(ierr == LA_ERANGE, 'la_weights: buffer too small')
  else
    call check(ierr == LA_ESTATE, 'la_weights_wait, not registered')
    call la_weights(wts, ierr=ierr)
    call check(ierr == LA_ESTATE, 'la_weights, not registered')
  end if

  call expect_stat(LA_STAT_CYCLES, 5_int64, 5_int64)
  call expect_stat(LA_STAT_PROFILED, 4_int64, 0_int64)
  call expect_stat(LA_STAT_SKIPPED, 0_int64, 0_int64)
  call expect_stat(LA_STAT_RANGE_ERRORS, 3_int64, 0_int64)
  call check(la_get_stat(99) == LA_EINVAL, 'la_get_stat(99)')
  call la_finalize(ierr)
  call check(ierr == LA_OK, 'la_finalize')
  call check(la_get_stat(LA_STAT_REGISTERED) == 0, 'not registered after finalize')
  call check(.not. la_is_profiling(), 'not profiling after finalize')

  ! ----------------------------------------------- phase 2: 4x3x2 grid
  call la_set_app_id('fmod-grid.1   ', ierr)
  call check(ierr == LA_OK, 'la_set_app_id (grid)')
  call la_register_grid(name, 0, 1, 4, 3, 2, ierr)
  print '(a,i0)', 'fmod: la_register_grid ierr=', ierr
  if (mode == 'agent') call check(ierr == LA_OK, 'la_register_grid')
  if (mode == 'noagent') call check(ierr == LA_ENOAGENT, 'la_register_grid')
  reg = ierr == LA_OK
  call check(la_is_profiling() .eqv. reg, 'la_is_profiling, grid')
  call la_start_cell(2, 1, 1)
  call work(200)
  call la_stop_cell(2, 1, 1)
  call la_start_cell(4_int64, 3_int64, 2_int64)
  call work(200)
  call la_stop_cell(4_int64, 3_int64, 2_int64)
  call la_start_cell(5, 1, 1)  ! i > nx: out of range
  call la_stop_cell(5, 1, 1)
  call la_start_row(2, 1, ierr)  ! cells (1..4, 2, 1): C 4..7
  call check(ierr == LA_OK, 'la_start_row')
  call work(400)
  call la_stop_row(2, 1, ierr)
  call check(ierr == LA_OK, 'la_stop_row')
  call la_start_box(1_int64, 1_int64, 2_int64, 2_int64, 2_int64, 1_int64, ierr)
  call check(ierr == LA_OK, 'la_start_box')  ! C 12, 13, 16, 17
  call work(400)
  call la_stop_box(1, 1, 2, 2, 2, 1, ierr)
  call check(ierr == LA_OK, 'la_stop_box')
  ! period 2 decides from the next cycle on: the grid's cycle 2 is not
  ! profiled, cycle 3 is; la_is_profiling says which, rows are no-ops in 2
  call la_set_period(2, ierr)
  call check(ierr == LA_OK, 'la_set_period(2)')
  call check(la_is_profiling() .eqv. reg, 'la_is_profiling, grid, cycle 1')
  call la_data_xfer(ierr)
  call check(ierr == LA_OK, 'la_data_xfer (grid)')
  call expect_stat(LA_STAT_CYCLES, 1_int64, 1_int64)
  call expect_stat(LA_STAT_PROFILED, 1_int64, 0_int64)
  call expect_stat(LA_STAT_RANGE_ERRORS, 2_int64, 0_int64)
  call check(.not. la_is_profiling(), 'la_is_profiling, period 2, cycle 2')
  call la_start_row(1_int64, 1_int64, ierr)
  call check(ierr == LA_OK, 'la_start_row, cycle not profiled')
  call la_stop_row(1_int64, 1_int64, ierr)
  call check(ierr == LA_OK, 'la_stop_row, cycle not profiled')
  call la_data_xfer()
  call check(la_is_profiling() .eqv. reg, 'la_is_profiling, period 2, cycle 3')
  call la_start_row(4, 1, ierr)  ! j > ny: out of range
  if (reg) then
    call check(ierr == LA_ERANGE, 'la_start_row out of range: LA_ERANGE')
  else
    call check(ierr == LA_OK, 'rows are no-ops when not registered')
  end if
  call la_finalize()  ! cycle 3 ends unsent: no trace
  call check(.not. la_is_profiling(), 'la_is_profiling after finalize (grid)')
  deallocate(msg)

  print '(a,l1,a,es10.3)', 'fmod: OK (profiled ', reg, ') sink ', sink

contains

  ! Phase 3 (mode numbering): global ids, array bounds, grid origin, tiles.
  subroutine numbering()
    integer :: e
    integer, dimension(12) :: ids
    call get_environment_variable('LA_AGENT', agent, alen, st)
    call la_set_agent(agent(1:alen), ierr)
    call check(ierr == LA_OK, 'la_set_agent')
    ids = [(100 * e, e = 1, 12)]
    call la_set_global_ids(ids, ierr)
    call check(ierr == LA_OK, 'la_set_global_ids')
    call la_set_app_id('fmod-ids.1', ierr)
    call la_register(name, 0, 1, 12, ierr)
    call check(ierr == LA_OK, 'la_register with ids')
    call la_start_probe(1)
    call work(100)
    call la_stop_probe(1)
    call la_data_xfer(ierr)
    call la_finalize()
    call la_set_global_ids([integer(int64) ::], ierr)
    call check(ierr == LA_OK, 'la_set_global_ids (forget)')

    call la_set_app_id('fmod-lb.1', ierr)
    call la_set_grid_origin([11, 1, 1], [20, 4, 2], ierr)
    call check(ierr == LA_OK, 'la_set_grid_origin')
    call la_register_grid_lb(name, 0, 1, [-1, 0, 2], [4, 3, 3], ierr)
    call check(ierr == LA_OK, 'la_register_grid_lb')
    call la_start_cell(-1, 0, 2)
    call work(100)
    call la_stop_cell(-1, 0, 2)
    call la_start_cell(4_int64, 3_int64, 3_int64)
    call work(100)
    call la_stop_cell(4_int64, 3_int64, 3_int64)
    call la_set_tile_offset(2, 1, 0)
    call la_start_cell(0, 0, 2)
    call work(100)
    call la_stop_cell(0, 0, 2)
    call la_set_tile_offset(0, 0, 0)
    ! rows and boxes take the program's indices and the tile offset too
    call la_start_row(2, 3, ierr)          ! C row (2,1): cells 36..41
    call check(ierr == LA_OK, 'la_start_row (bounds)')
    call work(100)
    call la_stop_row(2, 3, ierr)
    call check(ierr == LA_OK, 'la_stop_row (bounds)')
    call la_set_tile_offset(1, 0, 0)
    call la_start_box(-1, 0, 2, 2, 1, 1, ierr)   ! program (0..1,0,2): C 1, 2
    call check(ierr == LA_OK, 'la_start_box (bounds, tile)')
    call work(100)
    call la_stop_box(-1, 0, 2, 2, 1, 1, ierr)
    call check(ierr == LA_OK, 'la_stop_box (bounds, tile)')
    call la_set_tile_offset(0, 0, 0)
    call la_start_cell(5, 0, 2)  ! i > 4: out of range
    call la_stop_cell(5, 0, 2)
    call la_data_xfer(ierr)
    call check(ierr == LA_OK, 'la_data_xfer (bounds)')
    call check(la_get_stat(LA_STAT_RANGE_ERRORS) == 2, 'one cell out of range')
    call la_finalize()
    print '(a)', 'fmod: OK (numbering)'
  end subroutine

  ! Mode probes: custom probe functions from Fortran.
  !   fmod-probes.1, 4 elements, metric custom: start reads 0, stop reads
  !     element * scale (scale = 10, through arg). Cycle 1 probes element 2
  !     (20 at C index 1), then sets the stop function kilo_probe (element *
  !     1000) and probes element 3, still with the old one (30 at C 2);
  !     cycle 2 probes element 4 with the new one (4000 at C 3); cycle 3
  !     probes element 1 (1000 at C 0) and ends with la_finalize, which
  !     hands it over (tag 2).
  !   fmod-probes.2, metric time: probe functions while registered are
  !     refused with LA_ESTATE, as is la_set_metric.
  subroutine probes()
    real(c_double), target :: scale
    scale = 10
    call la_set_app_id('fmod-probes.1', ierr)
    call la_set_probe_start_func(zero_probe, ierr=ierr)
    call check(ierr == LA_OK, 'la_set_probe_start_func')
    call la_set_probe_stop_func(scaled_probe, c_loc(scale), ierr)
    call check(ierr == LA_OK, 'la_set_probe_stop_func')
    call la_register(name, 0, 1, 4, ierr)
    call check(ierr == LA_OK, 'la_register with probe functions')
    call la_start_probe(2)
    call la_stop_probe(2)
    call la_set_probe_stop_func(kilo_probe, ierr=ierr)
    call check(ierr == LA_OK, 'la_set_probe_stop_func while registered')
    call la_start_probe(3)
    call la_stop_probe(3)
    call la_data_xfer(ierr)
    call check(ierr == LA_OK, 'la_data_xfer (probes, cycle 1)')
    call la_start_probe(4)
    call la_stop_probe(4)
    call la_data_xfer(ierr)
    call la_start_probe(1)
    call la_stop_probe(1)
    call la_finalize(ierr)
    call check(ierr == LA_OK, 'la_finalize (probes)')
    call check(la_get_stat(LA_STAT_PROFILED) == 3, 'three cycles profiled')

    call la_set_probe_start_func(ierr=ierr)  ! none: back to time
    call check(ierr == LA_OK, 'la_set_probe_start_func()')
    call la_set_probe_stop_func()
    call la_set_metric('time', ierr)
    call la_set_app_id('fmod-probes.2', ierr)
    call la_register(name, 0, 1, 4, ierr)
    call check(ierr == LA_OK, 'la_register (time)')
    call la_set_probe_start_func(zero_probe, ierr=ierr)
    call check(ierr == LA_ESTATE, 'probe function with metric time: ESTATE')
    call la_set_metric('custom', ierr)
    call check(ierr == LA_ESTATE, 'la_set_metric while registered: ESTATE')
    call la_finalize()
    print '(a)', 'fmod: OK (probes)'
  end subroutine

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print '(a,a)', 'fmod: FAILED: ', what
      print '(a,a)', 'fmod: last error: ', la_last_error()
      error stop 2
    end if
  end subroutine

  ! Checks la_get_stat(which): want_reg when registered, else want_off.
  subroutine expect_stat(which, want_reg, want_off)
    integer, intent(in) :: which
    integer(int64), intent(in) :: want_reg, want_off
    integer(int64) :: v, want
    character(len=64) :: what
    v = la_get_stat(which)
    want = want_off
    if (reg) want = want_reg
    print '(a,i0,a,i0)', 'fmod: stat ', which, ' = ', v
    write (what, '(a,i0,a,i0,a,i0)') 'la_get_stat(', which, ') = ', v, &
         ', expected ', want
    call check(v == want, trim(what))
  end subroutine

  ! Some floating-point work to measure.
  subroutine work(n)
    integer, intent(in) :: n
    integer :: i
    do i = 1, n
      sink = sink + sqrt(real(i, 8) + sink * 1d-9)
    end do
  end subroutine

  subroutine print_codes()
    print '(a,1x,i0)', 'LA_OK', LA_OK
    print '(a,1x,i0)', 'LA_EINVAL', LA_EINVAL
    print '(a,1x,i0)', 'LA_ESTATE', LA_ESTATE
    print '(a,1x,i0)', 'LA_ENOAGENT', LA_ENOAGENT
    print '(a,1x,i0)', 'LA_EREFUSED', LA_EREFUSED
    print '(a,1x,i0)', 'LA_EAGENTLOST', LA_EAGENTLOST
    print '(a,1x,i0)', 'LA_EIPC', LA_EIPC
    print '(a,1x,i0)', 'LA_ENOEVENT', LA_ENOEVENT
    print '(a,1x,i0)', 'LA_EPAPI', LA_EPAPI
    print '(a,1x,i0)', 'LA_ERANGE', LA_ERANGE
    print '(a,1x,i0)', 'LA_ENOMEM', LA_ENOMEM
    print '(a,1x,i0)', 'LA_EDISABLED', LA_EDISABLED
    print '(a,1x,i0)', 'LA_EPROTO', LA_EPROTO
    print '(a,1x,i0)', 'LA_EMSGSIZE', LA_EMSGSIZE
    print '(a,1x,i0)', 'LA_ETRUNC', LA_ETRUNC
    print '(a,1x,i0)', 'LA_ETIMEDOUT', LA_ETIMEDOUT
    print '(a,1x,i0)', 'LA_EIO', LA_EIO
    print '(a,1x,i0)', 'LA_EAUTH', LA_EAUTH
    print '(a,1x,i0)', 'LA_ENOTFOUND', LA_ENOTFOUND
    print '(a,1x,i0)', 'LA_ELIMIT', LA_ELIMIT
    print '(a,1x,i0)', 'LA_ECONFIG', LA_ECONFIG
    print '(a,1x,i0)', 'LA_EVERSION', LA_EVERSION
    print '(a,1x,i0)', 'LA_ESKIPPED', LA_ESKIPPED
    print '(a,1x,i0)', 'LA_POLICY_WAIT', LA_POLICY_WAIT
    print '(a,1x,i0)', 'LA_POLICY_SKIP', LA_POLICY_SKIP
    print '(a,1x,i0)', 'LA_STAT_CYCLES', LA_STAT_CYCLES
    print '(a,1x,i0)', 'LA_STAT_PROFILED', LA_STAT_PROFILED
    print '(a,1x,i0)', 'LA_STAT_SKIPPED', LA_STAT_SKIPPED
    print '(a,1x,i0)', 'LA_STAT_WAITS', LA_STAT_WAITS
    print '(a,1x,i0)', 'LA_STAT_RANGE_ERRORS', LA_STAT_RANGE_ERRORS
    print '(a,1x,i0)', 'LA_STAT_WAIT_NS', LA_STAT_WAIT_NS
    print '(a,1x,i0)', 'LA_STAT_REGISTERED', LA_STAT_REGISTERED
    print '(a,1x,i0)', 'LA_STAT_TIMER_RES_NS', LA_STAT_TIMER_RES_NS
    print '(a,1x,i0)', 'LA_STAT_FLAGGED', LA_STAT_FLAGGED
    print '(a,1x,i0)', 'LA_STAT_INTERFERENCE_NS', LA_STAT_INTERFERENCE_NS
    print '(a,1x,i0)', 'LA_STAT_REREGISTERED', LA_STAT_REREGISTERED
    print '(a,1x,i0)', 'LA_STAT_REFUSED', LA_STAT_REFUSED
    print '(a,1x,i0)', 'LA_STAT_BEHIND', LA_STAT_BEHIND
  end subroutine

end program test_fmod

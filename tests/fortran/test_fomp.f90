! SPDX-License-Identifier: BSD-3-Clause
! test_fomp.f90: la_mod in an OpenMP program, and the channel variants of
! cells, rows and boxes. Run by tests/unit/test_fortran.c, which reads
! what reached the real daemons' store; built with -fopenmp.
!
! Metric custom: the start reading is 0 and the stop reading is `cur`, a
! threadprivate value the kernel sets to the work of the cell it is about
! to stop, so each stored value says exactly which cell's work it holds.
!
! Mode tiles: fomp-tiles.1, the array a(0:7, 1:4, 1:2) (8x4x2 cells, C
! index c = i + 8*((j-1) + 4*(k-1)), work of a cell c + 1), registered
! with its bounds and swept in 8 tiles of 4x2x1 cells by a kernel that
! opens its OpenMP parallel region (2 threads, one per tile row) inside
! the tile loop, the usual pattern:
!   cycle 0 (tag 0): la_start_cell_off with the tile's offset: every cell
!     holds its own work, no range error;
!   cycle 1 (tag 1): la_set_tile_offset by the thread that runs the tile
!     loop, then la_start_cell in the region: the other thread never set
!     an offset, so its probes are refused (range errors, la_last_error
!     names la_set_tile_offset) instead of landing on tile-local indices;
!     the store holds each cell's own work or 0, never another's; a row
!     probed by that thread is refused too (LA_ERANGE); once every offset
!     is back at (0,0,0) it probes cell (0,2,1) (C 8, refused before).
! Mode channels: fomp-ch.1, channels a and b, a 4x3x2 grid (la_register_
!   grid, 1-based), one cycle: la_start_cell_c(2, 1,1,1) reads 5 (b: cell
!   0), la_start_row_c(2, 2,1) 8 (b: cells 4..7, 2 each), la_start_row_c(
!   1, 3,2) 4 (a: cells 20..23, 1 each), la_start_box_c(2, 1,1,2, 2,2,1)
!   16 (b: cells 12, 13, 16, 17, 4 each), la_start_box_c(1, 3,3,1, 2,1,1)
!   6 (a: cells 10, 11, 3 each); a row in channel 3 (not declared) is
!   LA_ERANGE.
! Prints "fomp: OK (MODE)"; error stop on a wrong result it can see.
module fomp_probes
  use, intrinsic :: iso_c_binding, only: c_long, c_ptr, c_double, &
       c_associated
  implicit none
  real(c_double), save :: cur = 0
  !$omp threadprivate(cur)
contains
  function zero_reading(element, arg) bind(C) result(reading)
    integer(c_long), value :: element
    type(c_ptr), value :: arg
    real(c_double) :: reading
    reading = 0
    if (element < 1 .or. c_associated(arg)) reading = -1  ! not expected
  end function
  function cur_reading(element, arg) bind(C) result(reading)
    integer(c_long), value :: element
    type(c_ptr), value :: arg
    real(c_double) :: reading
    reading = cur
    if (element < 1 .or. c_associated(arg)) reading = -1  ! not expected
  end function
end module fomp_probes

program test_fomp
  use, intrinsic :: iso_fortran_env, only: int64
  use la_mod
  use fomp_probes
  use omp_lib, only: omp_get_thread_num
  implicit none
  character(len=16) :: mode
  character(len=256) :: agent
  integer :: ierr, alen, st

  mode = ''
  if (command_argument_count() >= 1) call get_command_argument(1, mode)
  call get_environment_variable('LA_AGENT', agent, alen, st)
  call la_set_agent(agent(1:alen), ierr)
  call check(ierr == LA_OK, 'la_set_agent')
  call la_set_probe_start_func(zero_reading)
  call la_set_probe_stop_func(cur_reading)
  if (mode == 'tiles') then
    call tiles()
  else if (mode == 'channels') then
    call channels()
  else
    call check(.false., 'usage: test_fomp tiles|channels')
  end if

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print '(a,a,a,a)', 'fomp: FAILED: ', what, ': ', la_last_error()
      error stop 1
    end if
  end subroutine

  ! The tiled kernel: tiles of 4x2x1 cells; the parallel region opens
  ! inside the tile loop. off: the _off probes; else la_set_tile_offset.
  subroutine sweep(off)
    logical, intent(in) :: off
    integer :: ti, tj, tk, i, j
    do tk = 1, 2
      do tj = 1, 3, 2
        do ti = 0, 4, 4
          if (.not. off) call la_set_tile_offset(ti - 1, tj - 1, tk - 1)
          !$omp parallel do num_threads(2) schedule(static, 1) private(i)
          do j = 1, 2
            do i = 1, 4
              ! cell (i+ti-1, j+tj-1, tk): C index c, work c + 1
              cur = real(1 + (i + ti - 1) + 8 * ((j + tj - 2) + 4 * (tk - 1)), 8)
              if (off) then
                call la_start_cell_off(i, j, 1, ti - 1, tj - 1, tk - 1)
                call la_stop_cell_off(i, j, 1, ti - 1, tj - 1, tk - 1)
              else
                call la_start_cell(i, j, 1)
                call la_stop_cell(i, j, 1)
              end if
            end do
          end do
          !$omp end parallel do
        end do
      end do
    end do
    call la_set_tile_offset(0, 0, 0)
  end subroutine

  subroutine tiles()
    integer(int64) :: errs
    integer :: rowrc
    character(len=:), allocatable :: msg
    call la_set_app_id('fomp-tiles.1', ierr)
    call la_register_grid_lb('fomp', 0, 1, [0, 1, 1], [7, 4, 2], ierr)
    call check(ierr == LA_OK, 'la_register_grid_lb')
    call sweep(.true.)
    call la_data_xfer(ierr)
    call check(ierr == LA_OK, 'la_data_xfer (off)')
    call check(la_get_stat(LA_STAT_RANGE_ERRORS) == 0, 'no range error (off)')
    call sweep(.false.)
    ! a row from the thread that never set an offset: refused, LA_ERANGE
    rowrc = 1
    call la_set_tile_offset(1, 0, 0)
    !$omp parallel num_threads(2)
    if (omp_get_thread_num() == 1) call la_start_row(1, 1, rowrc)
    !$omp end parallel
    call la_set_tile_offset(0, 0, 0)
    call check(rowrc == LA_ERANGE, 'a row from a thread without the offset')
    ! every offset back at 0,0,0: that thread probes again (cell (0,2,1),
    ! C 8, refused in the sweep above)
    !$omp parallel num_threads(2)
    if (omp_get_thread_num() == 1) then
      cur = 9
      call la_start_cell(0, 2, 1)
      call la_stop_cell(0, 2, 1)
    end if
    !$omp end parallel
    call la_data_xfer(ierr)
    call check(ierr == LA_OK, 'la_data_xfer (tile offset)')
    errs = la_get_stat(LA_STAT_RANGE_ERRORS)
    msg = la_last_error()
    print '(a,i0,a,a)', 'fomp: range errors ', errs, ': ', msg
    call check(errs > 0, 'the trap counted as range errors')
    call check(index(msg, 'la_set_tile_offset') > 0, 'the trap named')
    call la_finalize()
    print '(a)', 'fomp: OK (tiles)'
  end subroutine

  subroutine channels()
    integer :: cha, chb
    cha = la_channel('a')
    chb = la_channel('b')
    call check(cha == 1 .and. chb == 2, 'la_channel')
    call la_set_app_id('fomp-ch.1', ierr)
    call la_register_grid('fomp', 0, 1, 4, 3, 2, ierr)
    call check(ierr == LA_OK, 'la_register_grid')
    cur = 5
    call la_start_cell_c(chb, 1, 1, 1)
    call la_stop_cell_c(chb, 1, 1, 1)
    cur = 8
    call la_start_row_c(chb, 2, 1, ierr)
    call check(ierr == LA_OK, 'la_start_row_c')
    call la_stop_row_c(chb, 2, 1, ierr)
    call check(ierr == LA_OK, 'la_stop_row_c')
    cur = 4
    call la_start_row_c(cha, 3_int64, 2_int64, ierr)
    call check(ierr == LA_OK, 'la_start_row_c (channel 1)')
    call la_stop_row_c(cha, 3_int64, 2_int64, ierr)
    call check(ierr == LA_OK, 'la_stop_row_c (channel 1)')
    cur = 16
    call la_start_box_c(chb, 1, 1, 2, 2, 2, 1, ierr)
    call check(ierr == LA_OK, 'la_start_box_c')
    call la_stop_box_c(chb, 1, 1, 2, 2, 2, 1, ierr)
    call check(ierr == LA_OK, 'la_stop_box_c')
    cur = 6
    call la_start_box_c(cha, 3, 3, 1, 2, 1, 1, ierr)
    call check(ierr == LA_OK, 'la_start_box_c (channel 1)')
    call la_stop_box_c(cha, 3, 3, 1, 2, 1, 1, ierr)
    call check(ierr == LA_OK, 'la_stop_box_c (channel 1)')
    call la_start_row_c(3, 1, 1, ierr)
    call check(ierr == LA_ERANGE, 'a row in a channel not declared')
    call la_data_xfer(ierr)
    call check(ierr == LA_OK, 'la_data_xfer (channels)')
    call la_finalize()
    print '(a)', 'fomp: OK (channels)'
  end subroutine
end program test_fomp

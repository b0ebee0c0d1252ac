! SPDX-License-Identifier: BSD-3-Clause
! fwave.f90: the Fortran LA example, a 2-D scalar wave equation profiled per
! cell through the la_mod module.
!
! Solves u_tt = c^2 (u_xx + u_yy) on the unit square with N x N cells:
! leapfrog in time, the 5-point Laplacian in space, Courant number
! c dt / h = 0.5, u = 0 just outside the grid, a Gaussian pulse at rest to
! start. The columns (j, the last and slowest index, so that a column is
! contiguous in memory) are cut into blocks, one per MPI rank (the first
! mod(N, P) ranks get one column more); every time step exchanges one ghost
! column with each neighbour (MPI_Sendrecv) and updates every cell.
!
! The LA lines are marked "LA:": use la_mod, la_register_grid for the local
! block after MPI_Init, la_start_cell/la_stop_cell around each cell's update
! with 1-based (i, j, 1) indices, la_data_xfer once per time step,
! la_finalize before MPI_Finalize. --no-la runs a copy of the loop without
! probes and makes no LA call. The probed loop runs only in profiled steps:
! la_is_profiling() chooses once per step, and the other steps run the plain
! loop, which the compiler vectorises (!$omp simd, with -fopenmp-simd); a
! probe call inside it would keep it scalar in every step. --probe row times
! each column of N cells (la_start_row/la_stop_row around the inner loop)
! instead of each cell: coarser, much cheaper.
!
! Rank 0 prints a summary and a checksum: the sum of u over the grid, summed
! per column, reduced exactly (each column has one contributor) and added in
! column order, so that it is bit-identical with LA profiling, absent,
! disabled or --no-la, and for any number of ranks. The checksum line also
! shows the bits in hexadecimal: equal lines mean identical results.
!
! Not here: output of the field, a 3-D grid (see wavetoy.c), non-blocking
! halo exchange.
program fwave
  use, intrinsic :: iso_fortran_env, only: error_unit, output_unit
  use mpi_f08
  use la_mod ! LA: the module
  implicit none

  integer, parameter :: dp = kind(1.0d0)
  integer, parameter :: max_n = 16384, max_steps = 10000000
  integer :: rank, nprocs, ierr, rc, n, steps, nyl, j0, step
  integer :: la_rc, n_registered, registered, argc, a
  logical :: use_la, quiet, probe_rows
  real(dp), allocatable :: u(:,:), v(:,:), tmp(:,:)
  real(dp) :: t0, t1, wall, c2, checksum
  integer(8) :: stats(4), sums(4)
  character(len=:), allocatable :: app_id, la_why
  character(len=32) :: num, num2

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

  ! ------------------------------------------------------------ options --
  n = 128
  steps = 100
  use_la = .true.
  quiet = .false.
  probe_rows = .false.
  rc = 0
  argc = command_argument_count()
  a = 1
  do while (a <= argc .and. rc == 0)
    block
      character(len=256) :: arg, val
      integer :: eq
      call get_command_argument(a, arg)
      eq = index(arg, '=')
      if (arg == '--help' .or. arg == '-h') then
        if (rank == 0) call usage(output_unit)
        rc = 1
      else if (arg == '--no-la') then
        use_la = .false.
      else if (arg == '--quiet') then
        quiet = .true.
      else if (opt_is(arg, '--n') .or. opt_is(arg, '--steps') .or. &
           opt_is(arg, '--probe')) then
        if (eq > 0) then
          val = arg(eq + 1:)
        else if (a < argc) then
          a = a + 1
          call get_command_argument(a, val)
        else
          val = ''
        end if
        if (opt_is(arg, '--probe')) then
          if (val == 'cell' .or. val == 'row') then
            probe_rows = val == 'row'
          else
            if (rank == 0) write(error_unit, '(a)') &
                 'fwave: --probe expects one of cell, row'
            rc = 2
          end if
        else if (opt_is(arg, '--n')) then
          call parse_int(arg, val, max_n, n, rc)
        else
          call parse_int(arg, val, max_steps, steps, rc)
        end if
      else
        if (rank == 0) then
          write(error_unit, '(3a)') "fwave: unknown option '", trim(arg), &
               "'"
          call usage(error_unit)
        end if
        rc = 2
      end if
    end block
    a = a + 1
  end do
  if (rc == 0 .and. n < nprocs) then
    if (rank == 0) write(error_unit, '(a,i0,a,i0,a)') 'fwave: --n ', n, &
         ' is smaller than the ', nprocs, ' ranks'
    rc = 2
  end if
  if (rc /= 0) then
    call MPI_Finalize(ierr)
    if (rc == 2) call exit(2) ! usage error, as the C examples
    stop
  end if

  ! ------------------------------------------------------ decomposition --
  nyl = n / nprocs
  j0 = rank * nyl + min(rank, mod(n, nprocs)) ! global column before mine
  if (rank < mod(n, nprocs)) nyl = nyl + 1
  allocate(u(0:n + 1, 0:nyl + 1), v(0:n + 1, 0:nyl + 1))
  call init_pulse()
  c2 = 0.25_dp ! (c dt / h)^2, under the 2-D limit 1/2

  la_rc = 0
  registered = 0
  app_id = ''
  la_why = ''
  if (use_la) then
    call la_register_grid('fwave', rank, nprocs, n, nyl, 1, la_rc) ! LA:
    if (la_rc == LA_OK) then
      registered = 1
      app_id = la_app_id()
    else
      la_why = la_last_error()
      if (len(la_why) == 0) la_why = la_strerror(la_rc)
    end if
  end if

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  t0 = MPI_Wtime()
  do step = 1, steps
    call halo()
    if (use_la) then
      if (.not. la_is_profiling()) then ! LA: probes only in profiled steps
        call update_plain()
      else if (probe_rows) then
        call update_rows()
      else
        call update_la()
      end if
      call la_data_xfer() ! LA: one profiling cycle per time step
    else
      call update_plain()
    end if
    call move_alloc(v, tmp) ! v (the new level) becomes u
    call move_alloc(u, v)
    call move_alloc(tmp, u)
  end do
  t1 = MPI_Wtime() - t0
  call MPI_Reduce(t1, wall, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, &
       MPI_COMM_WORLD, ierr)

  checksum = global_sum()

  stats = 0
  if (use_la) then
    stats(1) = la_get_stat(LA_STAT_CYCLES)
    stats(2) = la_get_stat(LA_STAT_PROFILED)
    stats(3) = la_get_stat(LA_STAT_SKIPPED)
    stats(4) = la_get_stat(LA_STAT_WAITS)
    call la_finalize() ! LA:
  end if
  call MPI_Reduce(registered, n_registered, 1, MPI_INTEGER, MPI_SUM, 0, &
       MPI_COMM_WORLD, ierr)
  call MPI_Reduce(stats, sums, 4, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD, &
       ierr)

  if (rank == 0) then
    if (.not. quiet) then
      write(*, '(a,i0,a,i0,a,i0,3a,i0,a,i0,a,i0,a)') 'fwave: grid ', n, &
           ' x ', n, ' cells on ', nprocs, ' rank', trim(plural(nprocs)), &
           ' (blocks of ', n / nprocs, '..', &
           n / nprocs + merge(1, 0, mod(n, nprocs) /= 0), ' columns), ', &
           steps, ' steps'
      write(num, '(f12.3)') wall
      write(num2, '(f12.2)') wall * 1.0e9_dp * real(nprocs, dp) / &
           (real(n, dp) * real(n, dp) * real(steps, dp))
      write(*, '(5a)') 'fwave: wall time ', trim(adjustl(num)), ' s, ', &
           trim(adjustl(num2)), ' ns per cell update per rank'
      if (.not. use_la) then
        write(*, '(a)') 'fwave: LA off (--no-la): no LA call made'
      else if (n_registered > 0) then
        if (registered == 0) app_id = '?'
        write(*, '(a,i0,a,i0,a,a,a,i0,a,i0,a,i0,a,i0,a)') &
             'fwave: LA registered on ', n_registered, ' of ', nprocs, &
             ' ranks as ', app_id, &
             '; cycles ', sums(1), ', profiled ', sums(2), ', skipped ', &
             sums(3), ', waits ', sums(4), ' (all ranks)'
        if (registered == 0) write(*, '(2a)') &
             'fwave: LA not registered on rank 0: ', la_why
      else
        write(*, '(2a)') 'fwave: LA not registered, running unprofiled: ', &
             la_why
      end if
    end if
    write(num, '(es17.10)') checksum
    write(*, '(3a,z16.16,a)') 'fwave: checksum ', trim(adjustl(num)), &
         ' (bits 0x', transfer(checksum, 1_8), ')'
    flush(6)
  end if

  deallocate(u, v)
  call MPI_Finalize(ierr)

contains

  subroutine usage(unit)
    integer, intent(in) :: unit
    write(unit, '(a)') 'usage: mpiexec -n P fwave [--n N] [--steps S] &
         &[--no-la] [--probe cell|row] [--quiet]'
    write(unit, '(a)') '  2-D wave equation on N x N cells, blocks of columns, &
         &profiled per cell by LA'
    write(unit, '(a)') '  through the Fortran module la_mod.'
    write(unit, '(a)') '  --n N       cells per dimension (default 128, at &
         &least P)'
    write(unit, '(a)') '  --steps S   time steps (default 100)'
    write(unit, '(a)') '  --no-la     make no LA call at all (uninstrumented &
         &baseline)'
    write(unit, '(a)') '  --probe P   cell (default): a probe per cell; row: one per &
         &column of N'
    write(unit, '(a)') '              cells (profiled steps only; the others &
         &run the plain loop)'
    write(unit, '(a)') '  --quiet     print only the checksum line'
    write(unit, '(a)') '  --help      this text'
    write(unit, '(a)') 'LA reads LA_AGENT, LA_PERIOD, LA_METRIC, LA_DISABLE, &
         &LA_VERBOSE, ...'
    write(unit, '(a)') '(see examples/README.md). Without a LocalAgent the &
         &program runs unprofiled.'
  end subroutine

  ! arg is the option name, alone or followed by '='.
  logical function opt_is(arg, name)
    character(len=*), intent(in) :: arg, name
    integer :: l
    l = len(name)
    opt_is = .false.
    if (len_trim(arg) < l) return
    if (arg(1:l) /= name) return
    opt_is = len_trim(arg) == l .or. arg(l + 1:l + 1) == '='
  end function

  ! out = val as an integer in 1..maxv, else rc = 2 and a message.
  subroutine parse_int(arg, val, maxv, out, rc)
    character(len=*), intent(in) :: arg, val
    integer, intent(in) :: maxv
    integer, intent(inout) :: out, rc
    integer :: x, st, l
    x = 0
    st = 1
    if (len_trim(val) > 0 .and. verify(trim(val), '0123456789') == 0 .and. &
         len_trim(val) <= 9) read(val, *, iostat=st) x
    if (st /= 0 .or. x < 1 .or. x > maxv) then
      l = scan(arg, '=') - 1
      if (l < 1) l = len_trim(arg)
      if (rank == 0) write(error_unit, '(3a,i0)') 'fwave: ', arg(1:l), &
           ' expects an integer in 1..', maxv
      rc = 2
    else
      out = x
    end if
  end subroutine

  character(len=1) function plural(k)
    integer, intent(in) :: k
    plural = merge(' ', 's', k == 1)
  end function

  ! u = v = a Gaussian pulse at rest; ghosts 0.
  subroutine init_pulse()
    integer :: i, j
    real(dp) :: h, x, y
    h = 1.0_dp / real(n + 1, dp)
    u = 0.0_dp
    do j = 1, nyl
      y = real(j0 + j, dp) * h - 0.45_dp
      do i = 1, n
        x = real(i, dp) * h - 0.55_dp
        u(i, j) = exp(-(x * x + y * y) / (2.0_dp * 0.08_dp**2))
      end do
    end do
    v = u
  end subroutine

  ! Ghost columns 0 and nyl+1 of u from the neighbours (0 at the walls).
  subroutine halo()
    integer :: left, right
    left = MPI_PROC_NULL
    right = MPI_PROC_NULL
    if (rank > 0) left = rank - 1
    if (rank < nprocs - 1) right = rank + 1
    call MPI_Sendrecv(u(:, nyl), n + 2, MPI_DOUBLE_PRECISION, right, 1, &
         u(:, 0), n + 2, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, &
         MPI_STATUS_IGNORE, ierr)
    call MPI_Sendrecv(u(:, 1), n + 2, MPI_DOUBLE_PRECISION, left, 2, &
         u(:, nyl + 1), n + 2, MPI_DOUBLE_PRECISION, right, 2, &
         MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  end subroutine

  ! The new value of a cell: v <- 2u - v + c lap(u). The kernel, written
  ! once for the loops below; elemental, so it inlines and vectorises in
  ! the SIMD loop.
  elemental real(dp) function leap(uc, vc, ul, ur, ud, uu, c)
    real(dp), intent(in) :: uc, vc, ul, ur, ud, uu, c
    leap = 2.0_dp * uc - vc + c * (ul + ur + ud + uu - 4.0_dp * uc)
  end function

  ! One leapfrog step with a probe per cell (profiled steps).
  subroutine update_la()
    integer :: i, j
    do j = 1, nyl
      do i = 1, n
        call la_start_cell(i, j, 1) ! LA:
        v(i, j) = leap(u(i, j), v(i, j), u(i - 1, j), u(i + 1, j), &
             u(i, j - 1), u(i, j + 1), c2)
        call la_stop_cell(i, j, 1) ! LA:
      end do
    end do
  end subroutine

  ! One leapfrog step with a probe per column of n cells (--probe row): the
  ! column's loop has no call and vectorises.
  subroutine update_rows()
    integer :: j
    do j = 1, nyl
      call la_start_row(j, 1) ! LA:
      call column(u, v, j, n, nyl, c2)
      call la_stop_row(j, 1) ! LA:
    end do
  end subroutine

  ! The same without probes: steps not profiled, and --no-la.
  subroutine update_plain()
    integer :: j
    do j = 1, nyl
      call column(u, v, j, n, nyl, c2)
    end do
  end subroutine

  ! Column j of the new level, a SIMD loop. The arrays are dummy arguments,
  ! which cannot alias, so the loop vectorises (the program's own arrays,
  ! reached by host association, would be reloaded in every iteration).
  subroutine column(uo, vn, j, nx, ny, c)
    integer, intent(in) :: j, nx, ny
    real(dp), intent(in) :: uo(0:nx + 1, 0:ny + 1), c
    real(dp), intent(inout) :: vn(0:nx + 1, 0:ny + 1)
    integer :: i
    !$omp simd
    do i = 1, nx
      vn(i, j) = leap(uo(i, j), vn(i, j), uo(i - 1, j), uo(i + 1, j), &
           uo(i, j - 1), uo(i, j + 1), c)
    end do
  end subroutine

  ! Sum of u over the grid on rank 0 (0 elsewhere), independent of P.
  real(dp) function global_sum()
    real(dp), allocatable :: cols(:), total(:)
    integer :: j, i
    allocate(cols(n), total(n))
    cols = 0.0_dp
    total = 0.0_dp
    do j = 1, nyl
      cols(j0 + j) = 0.0_dp
      do i = 1, n
        cols(j0 + j) = cols(j0 + j) + u(i, j)
      end do
    end do
    call MPI_Reduce(cols, total, n, MPI_DOUBLE_PRECISION, MPI_SUM, 0, &
         MPI_COMM_WORLD, ierr)
    global_sum = 0.0_dp
    if (rank == 0) then
      do j = 1, n
        global_sum = global_sum + total(j)
      end do
    end if
    deallocate(cols, total)
  end function

end program fwave

! SPDX-License-Identifier: BSD-3-Clause
! solver.f90: a Fortran program built against an installed LA (la_mod) by
! test_install (pkg-config and CMake). It must start and run on without an
! agent. Prints "fsolver: started", the outcome of la_register, then
! "fsolver: OK".
program fsolver
  use la_mod
  implicit none
  integer :: ierr, i
  real(8) :: x
  print '(a)', 'fsolver: started'
  call la_register('fsolver', 0, 1, 4, ierr)
  if (ierr /= LA_OK) then
    print '(2a)', 'fsolver: register failed: ', la_last_error()
  end if
  x = 0
  call la_start_probe(3)
  do i = 1, 100000
    x = x + sqrt(real(i, 8))
  end do
  call la_stop_probe(3)
  call la_data_xfer()
  call la_finalize()
  if (x > 0) print '(a)', 'fsolver: OK'
end program fsolver

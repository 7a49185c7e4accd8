// Package faults holds vigil's fault-injection tests and nothing else: the
// daemon killed outright during a start, a stop, a reload and a drain; pid
// files that name strangers; directories removed under running processes;
// configurations rewritten while a reload reads them; clock jumps; and
// processes that close, flood or escape their output. Each test runs real
// processes as root against a daemon that is a process of its own (the test
// binary re-executed), and fails if vigil's behaviour in that fault regresses.
// docs/RELIABILITY.md lists the faults, the behaviour expected and the test
// that shows it.
//
// The tests are in a package of their own because one of them steps the
// machine's wall clock: nothing else runs in this test binary, and no test
// here runs in parallel. That one runs only with VIGIL_FAULTS_CLOCK=1, on
// its own, as other packages' tests would see the step too.
package faults

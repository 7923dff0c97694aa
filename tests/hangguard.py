"""How long a unit test waits for a process it started before it calls the process hung.

`make test` runs the unit tests at nice 19 beside the integration lanes, whose QEMU
guests (TCG) and traffic keep both cores busy at normal priority. A nice-19 process then
gets about 1.5 % of a core (the scheduler's weights are 15 against 1024), so an `offlab`
command that needs a second of CPU can take more than a minute of wall time: a 60 s
guard failed that way (`offlab run --duration nan`, fresh clone, 2026-11-29 13:25 UTC:
its one line already printed, its exit starved). The guard catches a hang; it is never a
measure of speed, so it is long.
"""

HANG_S = 600

"""The run wing: what `offlab run` and the operator's checks do with the wings below.
plan (a plan file expanded by the studies into cases), preflight and doctor with
store_health (what the machine, the servers and a store need, each with its fix),
confirm and dryrun (what a run will change on servers, said before it changes it),
runner (one case: topology, offloads, repetitions), runflow (a whole run into a store),
campaign (runs across a fleet), environment (the machine a run describes).

May import: report, studies, store, measure, analysis, topology, vm, hosts and the
ground floor. Only the command line (cli, entry) imports it."""

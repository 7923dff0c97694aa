"""The measure wing: one repetition of one case on a built topology, and what is read
around it. measure (the dispatcher and the iperf3 stream), traffic (iperf3's arguments
and results), capacity with ratesearch (the UDP rate search) and udpload (offlab-udpload),
latency, latency_probes and rtthist (irtt and sockperf), window (what a measured window
saw), cpu, counters, foreign, losscause, sockbuf and stackconfig (the machine's CPU,
counters, other load, loss causes and stack settings), headline (a sample's one number).

May import: topology, vm and hosts (the machines it measures on) and the ground floor
(records, proc, runscope, binaries). Never analysis, store, studies, report or run:
a sample is built here and judged, stored and reported above."""

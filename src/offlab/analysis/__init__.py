"""The analysis wing: the statistics every judgement of the lab rests on. stats
(summaries, intervals, tests, relative changes), adaptive (when a case has had enough
repetitions), compare_rule (when two sets of samples differ).

May import: the ground floor only (records). Pure functions of numbers: the store keeps
their outcomes, the report and the comparisons phrase them."""

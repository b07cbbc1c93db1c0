"""The judges of MR1-MR10: judge prompts and their JSON verdict, the jury and its majority,
the re-judging rubric, the simulated judge, each judged test read back from a log, the
judges' quality against human labels and the verdicts' nondeterminism over repeats.
Imports nothing: the family names these modules by reference."""

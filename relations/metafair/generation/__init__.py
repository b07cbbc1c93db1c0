"""metafair.generate: a generator model writes test sets; the rules that keep or drop what it
wrote, its simulated answers, its report and the export of a generation log to a test-set
file. Imports nothing: the family names these modules by reference."""

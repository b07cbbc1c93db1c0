"""MR11-MR14: closed answers (a score, Yes/No, an option, a ranking) read by deterministic
oracles, with their simulated answers, planted truth and report. Imports nothing: the family
names these modules by reference."""

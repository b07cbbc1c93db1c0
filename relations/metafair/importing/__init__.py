"""harness import metafair: executed pairs from any tool (CSV rows) read and written as a log
of closed cases, and the recorded: model that answers from them. Imports nothing: the family
names these modules by reference."""

"""MR1-MR10: open answers, a source and a follow-up request compared by a jury of judges
(MR1-MR7) or asked back as an inverted question (MR8-MR10); their cases and MR8's older
template reading. Imports nothing: the family names these modules by reference."""

"""Plug-ins: the one registry of families and what they contribute, found through entry
points, and the assembly of parts by name.

What lives here: `registry` (Family, Registry, the duplicate rule, entry-point discovery),
`family_refs` (Lazy and Deferred references, imported on first use), `family_parts` (the
core's typed lookup of each kind of part) and `assembly` (a relation or a model built by
name with validated options).

What it may import: the vocabulary, runtime, store and reporting (the types of the parts a
family contributes). Never a family: families are found, not named.
"""

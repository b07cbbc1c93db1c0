"""How one process uses the machine: work computed in a second process (`process_call`:
one call, or an iterator's items), the cyclic garbage collector paused around a bulk pass
(`gc_pause`) and asyncio primitives remade per running loop (`per_loop`).

The first two exist for speed only: the rooms above use them inside their own fast paths
(the report's counts computed aside, the engine's and the report's collector pauses) and
keep them out of their public types. Families reach them only through two neutral
facilities of the public surface (`ProcessItems`, `ReportContext.compute_aside`).

What it may import: the vocabulary.
"""

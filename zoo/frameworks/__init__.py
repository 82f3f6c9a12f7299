"""Framework adapters: one module per training library.

Each adapter knows how to recognise its files, load weights safely and build a
:class:`zoo.policy.Policy`. Nothing outside this package needs to know which
library produced a policy.
"""

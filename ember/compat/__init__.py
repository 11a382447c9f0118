"""Other frameworks' spellings of ember's API, kept apart from the canonical one.

:mod:`ember.compat.tvm` holds TVM's (Relay/Relax) names; each is a thin,
documented alias of the one ember function that does the work.
"""

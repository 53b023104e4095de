"""Every method's knobs in one place, and each graph's Context written out: a method's settings
class (its fields with ``knob`` metadata, read below the graphs through ``config.knobs_of``) and
the Context class its graph runs with (the shared fields of ``config.Context``, its settings and
its parts'). A bottom layer like ``config.py``: any layer may import it, it imports only
``config``, so a knob is declared once and typed wherever it is read."""

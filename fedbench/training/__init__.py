"""What trains a run: round planning (round_plan.py, hetero.py), the batched engine (engine.py) with
its compiled small-model path (fastpath.py, _fastloops.py) and stacked runs (stack.py), the thread
policy (threads.py), whole-dataset passes (evaluation.py), one run start to finish (runner.py), and
the per-device reference loop the engine is tested against (reference.py).

Importing this package imports none of them (torch stays unloaded until a module is used)."""

"""`fedbench reproduce`: a paper's tables in one command, within a budget.

reproduction_plan.py: which tables (one table on one dataset is a unit), their runs at a scale (the
paper's, the committed tables' cut one, or a minutes-long quick one kept in its own folder), what is
done, the order (cheapest complete table first) and each unit's expected time. run_units.py: the
units run through the sweep's machinery (executors, checkpoints, signals) under a deadline
(fedbench.sweep.budget). screen.py: the lines said before and after.
"""

"""zoo's own tensor task definitions (their ids: :data:`zoo.tensor_env.TASKS`).

Each one re-implements an example env that runs are trained with (Genesis' Go2 walking and drone hover),
so that zoo can evaluate such a run without running the run's own code. Importing these modules is cheap:
the simulator is imported only when an env is built.
"""

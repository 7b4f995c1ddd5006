"""Background jobs: batch print files (``/api-ext/pdf-processing``). No Flask here.

``processing`` is the state machine of one job, ``notify`` delivers its state changes to the
shop, ``queue`` runs jobs on RQ (with Redis) or in a thread of the app process (without),
and ``cli`` is the ``pps worker`` command.
"""

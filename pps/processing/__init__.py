"""Batch print files (``/api-ext/pdf-processing``), rendered in the background.

``job`` is the state machine of one job (no Flask), ``notify`` delivers its state changes to
the shop, ``worker`` holds the functions RQ runs, ``cli`` is the ``pps worker`` command and
``api`` the endpoints (``schemas`` their bodies). Where jobs run, RQ on Redis or a thread of
the app, is :mod:`pps.platform.queue`.
"""

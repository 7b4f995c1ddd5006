"""Webhooks: the shop subscribes a URL to an event and pps POSTs each occurrence there.

``events`` names the events and holds :func:`~pps.webhooks.events.emit`, the one call a
feature makes when something happened (it writes the outbox and wakes the dispatcher);
``delivery`` signs and sends one message (Standard Webhooks) and judges the answer;
``dispatcher`` sends the outbox with bounded concurrency per client and overall; ``api``
and ``schemas`` are ``/api-ext/webhook``. Storage is
:mod:`pps.platform.repository.integrations`; where URLs may point, :mod:`pps.platform.ssrf`.
"""

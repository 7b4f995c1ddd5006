"""``pps client`` commands for what connects pps back to a shop: the remote ACL URL, hosts
on the shop's own network that notifications and webhooks may reach, the webhook secret;
and how the editor treats the client's customers (whether the proof must be confirmed).

Registered on the ``pps client`` group by :mod:`pps.cli`.
"""

from __future__ import annotations

import json

import click
from flask import current_app
from flask.cli import with_appcontext

from pps.platform.hostnames import is_host
from pps.platform.services import Services
from pps.platform.ssrf import ForbiddenTarget, parse_target

__all__ = [
    "client_allow_host",
    "client_proof_approval",
    "client_rotate_webhook_secret",
    "client_set_acl_url",
]


def _services() -> Services:
    services: Services = current_app.extensions["pps"]
    return services


def _known(identifier: str) -> None:
    if _services().repository.get_client(identifier) is None:
        raise click.ClickException(f"no client {identifier!r}; see 'pps client list'")


@click.command("set-acl-url")
@click.argument("identifier")
@click.argument("url", required=False)
@click.option("--clear", is_flag=True, help="Remove the URL: remote-ACL drafts are then denied.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@with_appcontext
def client_set_acl_url(identifier: str, url: str | None, clear: bool, as_json: bool) -> None:
    """Set the URL pps asks before actions on the client's remoteAcl drafts."""
    _known(identifier)
    if clear == bool(url):
        raise click.UsageError("give a URL, or --clear")
    if url:
        try:
            parse_target(url)
        except ForbiddenTarget as exc:
            raise click.BadParameter(str(exc), param_hint="URL") from None
    _services().integrations.set_acl_url(identifier, url or None)
    if as_json:
        click.echo(json.dumps({"identifier": identifier, "aclUrl": url or None}))
        return
    click.echo(f"ACL URL of {identifier}: {url or '(none)'}")


@click.command("allow-host")
@click.argument("identifier")
@click.argument("hosts", nargs=-1)
@click.option("--remove", is_flag=True, help="Take the HOSTS off the list instead.")
@click.option("--json", "as_json", is_flag=True, help="Print the resulting list as JSON.")
@with_appcontext
def client_allow_host(identifier: str, hosts: tuple[str, ...], remove: bool, as_json: bool) -> None:
    """Let the client's notifications and webhooks reach HOSTS on private addresses.

    For intranet shops: a host name (or IP literal) listed here may resolve to loopback or
    private (RFC 1918, CGNAT, unique-local) addresses for this client only. Link-local,
    multicast and other special-purpose addresses stay refused. Without HOSTS, prints the list.
    """
    _known(identifier)
    store = _services().integrations
    current = set(store.settings(identifier).allowed_hosts)
    names: set[str] = set()
    for host in hosts:
        name = host.strip().lower().rstrip(".")
        name = name.strip("[]")  # an IPv6 literal may come bracketed
        if not is_host(name):
            raise click.BadParameter(
                f"{host!r} is not a host name or an IP address", param_hint="HOSTS"
            )
        names.add(name)
    if hosts:
        updated = current - names if remove else current | names
        store.set_allowed_hosts(identifier, sorted(updated))
        current = updated
    if as_json:
        click.echo(json.dumps(sorted(current)))
        return
    shown = " ".join(sorted(current)) or "(none)"
    click.echo(f"Hosts {identifier} may reach on private addresses: {shown}")


@click.command("rotate-webhook-secret")
@click.argument("identifier")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@with_appcontext
def client_rotate_webhook_secret(identifier: str, as_json: bool) -> None:
    """Give the client a new webhook signing secret and print it (shown only now)."""
    _known(identifier)
    secret = _services().integrations.rotate_webhook_secret(identifier)
    if as_json:
        click.echo(json.dumps({"identifier": identifier, "webhookSecret": secret}))
        return
    click.echo(secret)


@click.command("proof-approval")
@click.argument("identifier")
@click.option("--required", is_flag=True, help="Customers must tick the proof before Finish.")
@click.option("--optional", is_flag=True, help="Customers may finish without ticking it.")
@click.option("--json", "as_json", is_flag=True, help="Print the setting as JSON.")
@with_appcontext
def client_proof_approval(identifier: str, required: bool, optional: bool, as_json: bool) -> None:
    """Show or set whether the editor's proof must be confirmed before Finish.

    --required: Finish is refused until the customer ticks "I have checked spelling and
    layout" on the proof step. --optional (the default for new clients): the proof step is
    offered and an approval is recorded when ticked, but Finish works without it.
    """
    # One switch each rather than a --required/--optional pair, which took the last of
    # both silently.
    if required and optional:
        raise click.UsageError("give --required or --optional, not both")
    _known(identifier)
    store = _services().integrations
    if required or optional:
        store.set_proof_required(identifier, required)
    current = store.settings(identifier).proof_required
    if as_json:
        click.echo(json.dumps({"identifier": identifier, "proofRequired": current}))
        return
    click.echo(f"Proof approval for {identifier}: {'required' if current else 'optional'}")

"""The "naive" ``/auth`` the issue compares against: Flask + PyJWT + redis-py, nothing else.

No user lookup, no session, no redirect check, no error pages: verify, claim, redirect.
Used by bench/ablate_auth.py as a reference row, never by pps.
"""

from __future__ import annotations

import jwt
import redis
from flask import Flask, abort, redirect, request
from werkzeug.wrappers import Response


def naive_app(redis_url: str, keys: dict[str, str]) -> Flask:
    app = Flask(__name__)
    store = redis.Redis.from_url(redis_url)

    @app.get("/auth")
    def auth() -> Response:
        token = request.args.get("jwt", "")
        client = jwt.decode(token, options={"verify_signature": False}).get("client", "")
        claims = jwt.decode(
            token, keys.get(client, ""), algorithms=["HS256"], options={"verify_iat": False}
        )
        jti = jwt.get_unverified_header(token).get("jti") or claims.get("jti")
        if not store.set(f"naive:jti:{client}:{jti}", 1, nx=True, ex=3600):
            abort(401)
        return redirect(claims["redirect"])

    return app

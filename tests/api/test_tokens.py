"""Token authentication and scopes: only 'Authorization: Bearer', stored hashed, revocable; 401 and 403 bodies."""

from __future__ import annotations

import hashlib
import json

from api_support import Api

from taskq.queues.cli import main
from taskq.queues.models import ApiToken

SIZE = "/api/v1/queues/jobs/size"


def publish(api: Api, queue: str = "jobs", secret: str | None = None):
    return api.post(f"/api/v1/queues/{queue}/tasks", {"type": "t"}, secret=secret)


def test_missing_wrong_and_malformed_tokens_get_401_with_a_json_body(api):
    for secret in ("", "tq_wrong", "not-even-a-tq-token", "tq_" + "x" * 500):
        response = api.get(SIZE, secret=secret or "")
        if secret == "":
            response = api.client.get(SIZE)
        assert response.status_code == 401
        assert response.json()["error"] == "unauthenticated"
        assert response["WWW-Authenticate"].startswith("Bearer")
    assert api.client.get(SIZE, HTTP_AUTHORIZATION=f"Basic {api.secret}").status_code == 401


def test_a_token_in_the_query_string_or_a_cookie_is_ignored(api):
    assert api.client.get(SIZE, {"token": api.secret, "access_token": api.secret}).status_code == 401
    api.client.cookies["token"] = api.secret
    assert api.client.get(SIZE).status_code == 401


def test_only_the_hash_and_a_prefix_are_stored(api):
    token = ApiToken.objects.get(name="all")
    assert token.secret_hash == hashlib.sha256(api.secret.encode()).hexdigest()
    assert api.secret.startswith(token.prefix) and len(token.prefix) < 16
    assert api.secret not in json.dumps(list(ApiToken.objects.values()), default=str)


def test_revoked_tokens_are_refused_and_use_is_recorded(api):
    assert publish(api).status_code == 201
    assert ApiToken.objects.get(name="all").last_used_at is not None
    ApiToken.objects.filter(name="all").update(revoked_at="2026-01-01T00:00:00Z")
    assert publish(api).status_code == 401


def test_queue_and_namespace_scopes(engine, make_token):
    api = Api(make_token("narrow", queues=["jobs"], namespaces=["shop"]))
    assert publish(api, "jobs").status_code == 201
    assert publish(api, "shop:orders").status_code == 201
    for queue in ("other", "shop", "shopping:x", "shop:"):
        response = publish(api, queue)
        assert response.status_code == 403, queue
        assert response.json() == {
            "error": "permission_denied",
            "field": "queue",
            "message": f'this token may not use queue "{queue}"',  # the name as JSON writes it
        }
    consume = api.post("/api/v1/consume", {"queues": ["jobs", "other"]})
    assert consume.status_code == 403 and '"other"' in consume.json()["message"]
    assert api.get("/api/v1/queues/other/size").status_code == 403
    assert api.post("/api/v1/queues/other/tasks/x/ack", {"lease": "l"}).status_code == 403


def test_cli_token_create_ls_revoke(engine, db):
    def run(*argv):
        import io

        out, err = io.StringIO(), io.StringIO()
        return main(list(argv), stdout=out, stderr=err), out.getvalue(), err.getvalue()

    code, out, _ = run("token", "create", "--name", "billing", "--queues", "invoices,refunds", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["token"].startswith("tq_") and doc["queues"] == ["invoices", "refunds"]
    api = Api(doc["token"])
    assert publish(api, "invoices").status_code == 201
    assert publish(api, "jobs").status_code == 403

    code, out, _ = run("token", "ls", "--json")
    listed = json.loads(out)["tokens"]
    assert [t["name"] for t in listed] == ["billing"] and "token" not in listed[0]
    assert doc["token"] not in out

    code, _, err = run("token", "create", "--name", "billing", "--queues", "x")
    assert code == 2 and "exists already" in err
    code, _, err = run("token", "create", "--name", "bad", "--queues", "a{b}")
    assert code == 2 and "invalid input" in err
    code, _, err = run("token", "create", "--name", "none")
    assert code == 2

    code, out, _ = run("token", "revoke", "billing", "--json")
    assert code == 0 and json.loads(out)["revoked"] is True
    assert publish(api, "invoices").status_code == 401
    code, _, err = run("token", "revoke", "nobody")
    assert code == 1 and "no token named" in err


def test_admin_creates_a_token_and_shows_the_secret_once(engine, admin_client):
    response = admin_client.post(
        "/admin/taskq/apitoken/add/", {"name": "web", "queues": '["jobs"]', "namespaces": "[]"}, follow=True
    )
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    secret = next(word for m in shown for word in m.split() if word.startswith("tq_"))
    token = ApiToken.objects.get(name="web")
    assert token.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert publish(Api(secret), "jobs").status_code == 201
    page = admin_client.get(f"/admin/taskq/apitoken/{token.pk}/change/").content.decode()
    assert secret not in page and token.prefix in page
    admin_client.post("/admin/taskq/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert publish(Api(secret), "jobs").status_code == 401

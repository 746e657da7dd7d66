"""The simulated cluster's endpoints: what answers at a node port, checking the access params."""

from __future__ import annotations

from gpupaas.provisioning.drivers.simulated.endpoints import Endpoint


def test_the_access_params_decide_the_answer() -> None:
    endpoint = Endpoint("<b>lab</b>", "img", "jupyter", (("token", "abc"),))
    status, body = endpoint.answer("/?token=abc")
    assert status == 200 and "signed in" in body and "&lt;b&gt;lab&lt;/b&gt;" in body
    assert endpoint.answer("/lab?token=abd")[0] == 403
    assert endpoint.answer("/")[0] == 403
    assert Endpoint("x", "img", "http", ()).answer("/anything")[0] == 200

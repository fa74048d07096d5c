"""Imports point down the layers: the modules below never import the ones above them."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imported_by(module: str) -> set[str]:
    """Every kcoord module that importing `module` alone loads, in a fresh interpreter."""
    code = (f"import sys, {module}\n"
            "print('\\n'.join(m for m in sys.modules if m == 'kcoord' or m.startswith('kcoord.')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_security_does_not_import_the_api_package():
    # The API descriptors declare their ACL needs in kcoord.security.acl_needs and the server
    # hands each request's descriptor to the authorizer, so security never reaches up.
    for module in ("kcoord.security.acls", "kcoord.security.gate", "kcoord.security.setup"):
        loaded = _imported_by(module)
        assert not {m for m in loaded if m == "kcoord.api" or m.startswith("kcoord.api.")}, module


def test_acl_needs_is_a_leaf():
    assert _imported_by("kcoord.security.acl_needs") == {"kcoord", "kcoord.security", "kcoord.security.acl_needs"}

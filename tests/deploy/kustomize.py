"""tests/deploy/kustomize.py — renders a kustomization offline, for the features
deploy/kubernetes uses and nothing more: `resources` (files and directories, a directory
rendered whole first, as kustomize does with a base), `patches` by path (strategic merge:
`$patch: delete`, maps merged, lists of named items — containers, env — merged by name, other
lists replaced), `namespace`, `images`.

kubectl is not a Debian 12 package recent enough (1.20, without `patches`), so `make test` cannot
count on it; where a kubectl with kustomize is installed, tests/deploy renders with both and
requires the same objects (test_kubernetes.py), which keeps this renderer honest.
"""
import copy
import os

import yaml

CLUSTER_SCOPED = {"Namespace"}


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def identity(obj):
    return (obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else "", obj["kind"],
            obj["metadata"]["name"])


def _named_list(items):
    return bool(items) and all(isinstance(i, dict) and "name" in i for i in items)


def merge(base, patch):
    """Strategic merge of patch into base (a new object)."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = copy.deepcopy(base)
        for k, v in patch.items():
            if k == "$patch":
                continue
            out[k] = merge(out[k], v) if k in out else copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(patch, list) and _named_list(base) and _named_list(patch):
        # as kustomize orders them: the patch's items first, in its order, then the rest
        by_name = {b["name"]: b for b in base}
        out = [merge(by_name[i["name"]], i) if i["name"] in by_name else copy.deepcopy(i)
               for i in patch]
        named = {i["name"] for i in patch}
        return out + [copy.deepcopy(b) for b in base if b["name"] not in named]
    return copy.deepcopy(patch)


def _apply_patch(objs, patch):
    key = identity(patch)
    hits = [n for n, o in enumerate(objs) if identity(o) == key]
    assert len(hits) == 1, "patch %s/%s matches %d objects" % (key[1], key[2], len(hits))
    if patch.get("$patch") == "delete":
        del objs[hits[0]]
    else:
        objs[hits[0]] = merge(objs[hits[0]], patch)


def _set_images(obj, images):
    spec = obj.get("spec", {}).get("template", {}).get("spec") or obj.get("spec", {})
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        name, _, tag = c.get("image", "").partition(":")
        for img in images:
            if img["name"] == name:
                c["image"] = "%s:%s" % (img.get("newName", name), img.get("newTag", tag))


def render(directory):
    """The objects `kubectl kustomize directory` would print, in resource order."""
    with open(os.path.join(directory, "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    assert k["kind"] == "Kustomization", directory
    known = {"apiVersion", "kind", "namespace", "resources", "patches", "images"}
    assert set(k) <= known, "renderer does not do %s" % (set(k) - known)
    objs = []
    for r in k.get("resources", []):
        path = os.path.join(directory, r)
        if os.path.isdir(path):
            # kustomize refuses a base that contains the kustomization using it (a cycle)
            here, base = os.path.realpath(directory), os.path.realpath(path)
            assert not (here + "/").startswith(base + "/"), "%s is inside its base %s" % (here, base)
            objs += render(path)
        else:
            objs += load(path)
    keys = [identity(o) for o in objs]
    assert len(keys) == len(set(keys)), "an object is defined twice in %s" % directory
    for p in k.get("patches", []):
        assert set(p) == {"path"}, "renderer does patches by path only"
        for patch in load(os.path.join(directory, p["path"])):
            _apply_patch(objs, patch)
    for o in objs:
        if k.get("namespace") and o["kind"] not in CLUSTER_SCOPED:
            o["metadata"]["namespace"] = k["namespace"]
        _set_images(o, k.get("images", []))
    return objs

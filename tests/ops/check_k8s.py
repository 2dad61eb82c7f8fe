#!/usr/bin/env python3
"""Structure of the Kubernetes manifests under deploy/k8s/, with python3-yaml,
and their renders with `kubectl kustomize` where a kubectl is installed
(Debian 12 packages neither kubectl nor kustomize; without one the
kustomizations are resolved here, components and their patches included):

  - every kustomization.yaml: each file or directory it lists (resources,
    components, configMapGenerator files) exists and parses; nested
    kustomizations too;
  - every object has apiVersion, kind, metadata.name;
  - each root (base: the relay as its own Deployment; sidecar: the relay as
    a native sidecar of the application) alone holds no object of the
    Prometheus Operator's CRDs (monitoring.coreos.com), so it applies on any
    cluster; with its `monitoring` component it has a PodMonitor and the
    PrometheusRule, both with the `release` label (rules/kustomization.yaml);
  - the generated ConfigMap keeps its hash suffix (no
    disableNameSuffixHash), so a changed config.yaml rolls the pods;
  - with kubectl: the overlay docs/DEPLOY.md shows (base, component, a patch
    with another release name) renders with that release and namespace;
  - per root, with its monitoring component:
      * Deployment selector labels are on its pod template; a
        PodDisruptionBudget and a PodMonitor select those pods, and the
        PodMonitor's port is a named container port 9464 serving /metrics;
      * the relay container: liveness GET /healthz on 9464; as a Deployment of
        its own also readiness GET /readyz on 9464; as a native sidecar
        (initContainers, restartPolicy: Always) no readinessProbe and no
        startupProbe, so that its probes never gate the application;
      * every container and init container: runAsNonRoot,
        readOnlyRootFilesystem, allowPrivilegeEscalation false, capabilities
        drop ALL, seccompProfile RuntimeDefault; the pod and any ServiceAccount
        automountServiceAccountToken: false;
      * the config volume is the kustomization's generated ConfigMap, mounted
        at /etc/outbox-relay where the args point; its config.yaml listens on
        0.0.0.0:9464, every ${VAR} and password_env it needs is in the
        container's env, passwords come from a secretKeyRef, and
        terminationGracePeriodSeconds covers the relay's shutdown deadline;
      * the kustomization's `images:` entry names the relay's image;
  - the PrometheusRule's groups equal deploy/prometheus/alerts.yml's.

--self-test also breaks copies of the manifests in memory (a /readyz
readinessProbe on the sidecar, a PDB selecting nothing, a writable root
filesystem, a PrometheusRule that differs from alerts.yml, a PodMonitor in a
base, a component without the release label, a resource file that does not
exist) and fails unless each is caught.

Usage: tests/ops/check_k8s.py [--self-test]       Exit 0 ok, 1 failure.
"""
import copy
import os
import re
import sys

try:
    import yaml
except ImportError:
    print("check_k8s: PyYAML is required (apt-get install -y python3-yaml)")
    sys.exit(1)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
K8S = os.path.join(ROOT, "deploy", "k8s")
ALERTS = os.path.join(ROOT, "deploy", "prometheus", "alerts.yml")
RELAY_PORT = 9464
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}")


def rel(p):
    return os.path.relpath(p, ROOT)


def load_kustomization(d, errors, seen=None, components=()):
    """(objects, generated {name: {file: text}}, images, kustomization) of the
    kustomization in directory d, nested ones included, with the components
    it lists and the extra `components` (directories) an overlay would add."""
    seen = set() if seen is None else seen
    path = os.path.join(d, "kustomization.yaml")
    if not os.path.isfile(path):
        errors.append(f"{rel(d)}: no kustomization.yaml")
        return [], {}, [], {}
    if path in seen:
        return [], {}, [], {}
    seen.add(path)
    with open(path, encoding="utf-8") as f:
        k = yaml.safe_load(f) or {}
    if k.get("kind") not in ("Kustomization", "Component"):
        errors.append(f"{rel(path)}: kind is neither Kustomization nor Component")
    objects, generated, images = [], {}, list(k.get("images", []))
    for r in k.get("resources", []):
        p = os.path.normpath(os.path.join(d, r))
        if os.path.isdir(p):
            o, g, i, sub = load_kustomization(p, errors, seen)
            if sub.get("kind") == "Component":
                errors.append(f"{rel(path)}: resource {r} is a Component; list it under components:")
            objects += o
            generated.update(g)
            images += i
        elif os.path.isfile(p):
            try:
                with open(p, encoding="utf-8") as f:
                    docs = [x for x in yaml.safe_load_all(f) if x is not None]
            except yaml.YAMLError as e:
                errors.append(f"{rel(p)}: does not parse: {e}")
                continue
            for doc in docs:
                doc["__file__"] = rel(p)
                objects.append(doc)
        else:
            errors.append(f"{rel(path)}: resource {r} does not exist")
    if (k.get("generatorOptions") or {}).get("disableNameSuffixHash"):
        errors.append(f"{rel(path)}: generatorOptions.disableNameSuffixHash: a changed config.yaml "
                      f"would no longer roll the pods")
    for gen in k.get("configMapGenerator", []):
        if (gen.get("options") or {}).get("disableNameSuffixHash"):
            errors.append(f"{rel(path)}: configMapGenerator {gen.get('name')} disables its hash suffix: "
                          f"a changed config.yaml would no longer roll the pods")
        files = {}
        for entry in gen.get("files", []):
            key, _, name = entry.rpartition("=")
            p = os.path.normpath(os.path.join(d, name))
            if not os.path.isfile(p):
                errors.append(f"{rel(path)}: configMapGenerator {gen.get('name')} file {name} does not exist")
                continue
            text = open(p, encoding="utf-8").read()
            try:
                yaml.safe_load(text)
            except yaml.YAMLError as e:
                errors.append(f"{rel(p)}: does not parse: {e}")
            files[key or os.path.basename(name)] = text
        generated[gen.get("name")] = files
    # Components see everything accumulated so far (their patches too).
    comp_dirs = [os.path.normpath(os.path.join(d, c)) for c in k.get("components", [])]
    for c in comp_dirs + [os.path.normpath(c) for c in components]:
        if not os.path.isdir(c):
            errors.append(f"{rel(path)}: component {rel(c)} does not exist")
            continue
        o, g, i, ck = load_component(c, objects, errors, seen)
        generated.update(g)
        images += i
    apply_patches(k, objects, errors, path)
    return objects, generated, images, k


def load_component(c, objects, errors, seen):
    """Adds the objects of component directory c to objects (its patches
    apply to all of them)."""
    o, g, i, ck = load_kustomization(c, errors, seen)
    if ck and ck.get("kind") != "Component":
        errors.append(f"{rel(c)}: listed under components: but its kind is {ck.get('kind')}")
    # load_kustomization applied ck's patches to its own objects only; a
    # component's patches reach what the including kustomization has too.
    apply_patches(ck, objects, errors, os.path.join(c, "kustomization.yaml"))
    objects += o
    return o, g, i, ck


def apply_patches(k, objects, errors, path):
    """The JSON 6902 `add` patches of k with a group/kind target, the only
    kind this repository uses; anything else is reported."""
    for patch in k.get("patches", []) or []:
        target = patch.get("target") or {}
        try:
            ops = yaml.safe_load(patch.get("patch", "")) or []
        except yaml.YAMLError as e:
            errors.append(f"{rel(path)}: a patch does not parse: {e}")
            continue
        if not isinstance(ops, list) or set(target) - {"group", "kind"}:
            errors.append(f"{rel(path)}: only JSON 6902 patches with a group/kind target are checked here")
            continue
        for o in objects:
            group = (o.get("apiVersion") or "").rpartition("/")[0]
            if "group" in target and group != target["group"]:
                continue
            if "kind" in target and o.get("kind") != target["kind"]:
                continue
            for op in ops:
                parts = (op.get("path") or "").strip("/").split("/")
                if op.get("op") != "add" or len(parts) < 2:
                    errors.append(f"{rel(path)}: unsupported patch operation {op}")
                    continue
                node = o
                for part in parts[:-1]:
                    node = node.setdefault(part, {})
                node[parts[-1]] = op.get("value")


def matches(selector, labels):
    ml = (selector or {}).get("matchLabels") or {}
    return bool(ml) and all(labels.get(k) == v for k, v in ml.items())


def shutdown_budget_s(config):
    """Seconds the relay may take to stop on SIGTERM: min(60, lease_ms/2000 +
    5) for in-flight batches, then up to 5 for the producer flush."""
    leases = [int(str(s.get("lease_ms", 30000))) for s in config.get("services", [])] or [30000]
    return min(60, max(leases) / 2000 + 5) + 5


def needed_env(config_text):
    text = re.sub(r"(^|\s)#.*$", "", config_text, flags=re.M)
    need = {m.group(1) for m in VAR.finditer(text) if m.group(2) is None}
    need |= set(re.findall(r"^\s*password_env:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$", text, re.M))
    return need, set(re.findall(r"^\s*password_env:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$", text, re.M))


def probe_target(c, probe):
    get = (c.get(probe) or {}).get("httpGet") or {}
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
    port = get.get("port")
    return get.get("path"), ports.get(port, port)


def is_relay(c, relay_images):
    return c.get("image", "").split(":")[0].rsplit("/", 1)[-1] in relay_images


def check_security(where, pod, c, errors):
    psc = pod.get("securityContext") or {}
    sc = c.get("securityContext") or {}
    name = f"{where}: container {c.get('name')}"
    if not (sc.get("runAsNonRoot") is True or (psc.get("runAsNonRoot") is True and "runAsNonRoot" not in sc)):
        errors.append(f"{name}: runAsNonRoot is not true")
    if sc.get("readOnlyRootFilesystem") is not True:
        errors.append(f"{name}: readOnlyRootFilesystem is not true")
    if sc.get("allowPrivilegeEscalation") is not False:
        errors.append(f"{name}: allowPrivilegeEscalation is not false")
    if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
        errors.append(f"{name}: capabilities do not drop ALL")
    if (sc.get("capabilities") or {}).get("add"):
        errors.append(f"{name}: adds capabilities")
    seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
    if seccomp != "RuntimeDefault":
        errors.append(f"{name}: seccompProfile is not RuntimeDefault (got {seccomp})")
    if sc.get("privileged"):
        errors.append(f"{name}: privileged")


def check_root(name, objects, generated, images, errors):
    """name: a root ("base") or a root with its monitoring component
    ("base+monitoring")."""
    where = f"deploy/k8s/{name}"
    monitoring = name.endswith("+monitoring")
    crds = [o for o in objects if (o.get("apiVersion") or "").startswith("monitoring.coreos.com/")]
    if not monitoring:
        for o in crds:
            errors.append(f"{where}: {o.get('kind')} {o.get('__file__')} needs the Prometheus Operator's "
                          f"CRDs; it belongs in the optional monitoring component")
    for o in crds if monitoring else []:
        if not ((o.get("metadata") or {}).get("labels") or {}).get("release"):
            errors.append(f"{where}: {o.get('kind')} has no `release` label (kube-prometheus-stack "
                          f"selects by it; deploy/k8s/rules/kustomization.yaml sets it)")
    by_kind = {}
    for o in objects:
        for key in ("apiVersion", "kind"):
            if key not in o:
                errors.append(f"{o.get('__file__')}: an object has no {key}")
        if not (o.get("metadata") or {}).get("name"):
            errors.append(f"{o.get('__file__')}: {o.get('kind')} has no metadata.name")
        by_kind.setdefault(o.get("kind"), []).append(o)
    relay_images = {i.get("name") for i in images} | {"outbox-relay"}
    for sa in by_kind.get("ServiceAccount", []):
        if sa.get("automountServiceAccountToken") is not False:
            errors.append(f"{sa['__file__']}: ServiceAccount automountServiceAccountToken is not false")
    deps = by_kind.get("Deployment", [])
    if not deps:
        errors.append(f"{where}: no Deployment")
    relays = 0
    for dep in deps:
        f = dep["__file__"]
        spec = dep.get("spec", {})
        tmpl = spec.get("template", {})
        labels = (tmpl.get("metadata") or {}).get("labels") or {}
        if not matches(spec.get("selector"), labels):
            errors.append(f"{f}: the Deployment's selector does not match its pod template's labels")
        pod = tmpl.get("spec", {})
        if pod.get("automountServiceAccountToken") is not False:
            errors.append(f"{f}: pod automountServiceAccountToken is not false")
        if not any(matches(p.get("spec", {}).get("selector"), labels)
                   for p in by_kind.get("PodDisruptionBudget", [])):
            errors.append(f"{f}: no PodDisruptionBudget selects its pods")
        containers = pod.get("containers", [])
        inits = pod.get("initContainers", [])
        for c in containers + inits:
            check_security(f, pod, c, errors)
        volumes = {v.get("name"): v for v in pod.get("volumes", [])}
        for c, native in [(c, False) for c in containers] + [(c, True) for c in inits]:
            if not is_relay(c, relay_images):
                continue
            relays += 1
            cname = f"{f}: relay container {c.get('name')}"
            if native and c.get("restartPolicy") != "Always":
                errors.append(f"{cname}: an init container without restartPolicy: Always is not a sidecar")
            if probe_target(c, "livenessProbe") != ("/healthz", RELAY_PORT):
                errors.append(f"{cname}: livenessProbe must GET /healthz on {RELAY_PORT} "
                              f"(got {probe_target(c, 'livenessProbe')})")
            if native:
                for probe in ("readinessProbe", "startupProbe"):
                    if c.get(probe):
                        errors.append(f"{cname}: a native sidecar's {probe} gates the application "
                                      f"pod; it must have none")
            elif probe_target(c, "readinessProbe") != ("/readyz", RELAY_PORT):
                errors.append(f"{cname}: readinessProbe must GET /readyz on {RELAY_PORT} "
                              f"(got {probe_target(c, 'readinessProbe')})")
            if (c.get("image") or "").split(":")[0] not in {i.get("name") for i in images}:
                errors.append(f"{cname}: image {c.get('image')} is not set by the kustomization's images:")
            res = c.get("resources") or {}
            if "memory" not in (res.get("requests") or {}) or "memory" not in (res.get("limits") or {}):
                errors.append(f"{cname}: needs memory requests and limits")
            # PodMonitor: selects this pod, on a named port that is 9464.
            ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
            mons = [m for m in by_kind.get("PodMonitor", [])
                    if matches(m.get("spec", {}).get("selector"), labels)]
            if not mons and monitoring:
                errors.append(f"{f}: no PodMonitor selects its pods")
            for m in mons:
                for ep in m.get("spec", {}).get("podMetricsEndpoints", []):
                    if ports.get(ep.get("port")) != RELAY_PORT or ep.get("path", "/metrics") != "/metrics":
                        errors.append(f"{m['__file__']}: endpoint {ep} is not the relay's named port "
                                      f"{RELAY_PORT} with path /metrics")
                if m["metadata"]["name"] != "outbox-relay":
                    errors.append(f"{m['__file__']}: the PodMonitor must be named outbox-relay (its job "
                                  f"<namespace>/outbox-relay is what the alert selector matches)")
            # The config: generated ConfigMap, mounted where the args point.
            mounts = {vm.get("mountPath", "").rstrip("/"): vm for vm in c.get("volumeMounts", [])}
            vm = mounts.get("/etc/outbox-relay")
            args = " ".join(c.get("args", []) + c.get("command", []))
            if vm is None:
                errors.append(f"{cname}: nothing mounted at /etc/outbox-relay")
                continue
            if "--config" in args and "/etc/outbox-relay/config.yaml" not in args:
                errors.append(f"{cname}: args do not use /etc/outbox-relay/config.yaml")
            cm = ((volumes.get(vm.get("name")) or {}).get("configMap") or {}).get("name")
            if cm not in generated:
                errors.append(f"{cname}: the config volume names ConfigMap {cm}, which the kustomization "
                              f"does not generate")
                continue
            cfg_text = generated[cm].get("config.yaml")
            if cfg_text is None:
                errors.append(f"{where}: ConfigMap {cm} has no config.yaml")
                continue
            cfg = yaml.safe_load(cfg_text)
            if (cfg.get("http") or {}).get("listen") != f"0.0.0.0:{RELAY_PORT}":
                errors.append(f"{where}: config.yaml http.listen must be 0.0.0.0:{RELAY_PORT} for probes "
                              f"and scrapes")
            env = {e["name"]: e for e in c.get("env", [])}
            need, passwords = needed_env(cfg_text)
            for var in sorted(need - set(env) - {"HOSTNAME"}):
                errors.append(f"{cname}: config.yaml needs ${var}, which the container does not set")
            for var in sorted(passwords & set(env)):
                if "secretKeyRef" not in (env[var].get("valueFrom") or {}):
                    errors.append(f"{cname}: {var} is a password and must come from a secretKeyRef")
            budget = shutdown_budget_s(cfg)
            grace = int(pod.get("terminationGracePeriodSeconds", 30))
            if grace < budget + 10:
                errors.append(f"{f}: terminationGracePeriodSeconds {grace} must exceed the relay's "
                              f"shutdown deadline ({budget:.0f} s) by 10 s")
    if relays == 0:
        errors.append(f"{where}: no relay container (image {sorted(relay_images)})")
    rules = by_kind.get("PrometheusRule", [])
    if len(rules) != (1 if monitoring else 0):
        errors.append(f"{where}: want one PrometheusRule, found {len(rules)}")
    with open(ALERTS, encoding="utf-8") as fh:
        alerts = yaml.safe_load(fh)
    for r in rules:
        if (r.get("spec") or {}).get("groups") != alerts.get("groups"):
            errors.append(f"{r['__file__']}: spec.groups differ from deploy/prometheus/alerts.yml "
                          f"(run deploy/prometheus/generate-rules)")
    return errors


ROOTS = ("base", "sidecar")
# Each root alone and with its optional component (deploy/k8s/<root>/monitoring).
VARIANTS = {v: (r, c) for r in ROOTS for v, c in ((r, ()), (f"{r}+monitoring", (f"{r}/monitoring",)))}
KNOWN = set(ROOTS) | {"rules", "base/fleet"} | {f"{r}/monitoring" for r in ROOTS}


def load_variant(name, errors):
    root, comps = VARIANTS[name]
    return load_kustomization(os.path.join(K8S, root), errors,
                              components=[os.path.join(K8S, c) for c in comps])


def check_all(loaded):
    errors = []
    for name in VARIANTS:
        objects, generated, images, _ = loaded[name]
        check_root(name, objects, generated, images, errors)
    return errors


def fleet_renders():
    """base with the fleet component (docs/DEPLOY.md "A fleet"): kustomize
    accepts it, the Deployment runs 3 replicas, and the one ConfigMap holds
    the component's config.yaml, with its `fleet` block."""
    import shutil
    import subprocess
    import tempfile
    kubectl = shutil.which("kubectl")
    if not kubectl:
        return []
    with tempfile.TemporaryDirectory() as d:
        relp = lambda p: os.path.relpath(os.path.join(K8S, p), d)
        with open(os.path.join(d, "kustomization.yaml"), "w", encoding="utf-8") as f:
            f.write("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                    f"resources:\n  - {relp('base')}\ncomponents:\n  - {relp('base/fleet')}\n")
        r = subprocess.run([kubectl, "kustomize", d], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return [f"kubectl kustomize base+fleet: {r.stderr.strip()[:400]}"]
    docs = [x for x in yaml.safe_load_all(r.stdout) if x]
    problems = []
    deps = [o for o in docs if o["kind"] == "Deployment"]
    if [o["spec"].get("replicas") for o in deps] != [3]:
        problems.append("kubectl kustomize base+fleet: want one Deployment with 3 replicas")
    cms = [o for o in docs if o["kind"] == "ConfigMap"]
    config = yaml.safe_load(cms[0]["data"]["config.yaml"]) if len(cms) == 1 else {}
    if not (config.get("fleet") or {}).get("group_id"):
        problems.append("kubectl kustomize base+fleet: the ConfigMap has no fleet block")
    if not problems:
        print(f"ok    base with the fleet component renders: 3 replicas, "
              f"{len(config.get('services', []))} services in one fleet")
    return problems


def kubectl_renders():
    """Renders every variant with `kubectl kustomize` (an overlay in a
    temporary directory adds the component) and checks what the static
    resolution cannot prove: kustomize itself accepts the files, the
    Deployment mounts the ConfigMap under its hashed name, a root alone holds
    no monitoring.coreos.com object and with its component both objects
    carry `release`. Returns (problems, whether kubectl ran)."""
    import shutil
    import subprocess
    import tempfile
    kubectl = shutil.which("kubectl")
    if not kubectl:
        print("note  kubectl not installed: renders resolved statically only")
        return [], False
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (root, comps) in VARIANTS.items():
            d = os.path.join(tmp, name.replace("+", "-"))
            os.makedirs(d)
            relp = lambda p: os.path.relpath(os.path.join(K8S, p), d)
            with open(os.path.join(d, "kustomization.yaml"), "w", encoding="utf-8") as f:
                f.write("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                        f"resources:\n  - {relp(root)}\n")
                if comps:
                    f.write("components:\n" + "".join(f"  - {relp(c)}\n" for c in comps))
            r = subprocess.run([kubectl, "kustomize", d], capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                problems.append(f"kubectl kustomize deploy/k8s/{name}: {r.stderr.strip()[:400]}")
                continue
            docs = [x for x in yaml.safe_load_all(r.stdout) if x]
            kinds = sorted(o["kind"] for o in docs)
            crds = [o for o in docs if o["apiVersion"].startswith("monitoring.coreos.com/")]
            if comps:
                if sorted(o["kind"] for o in crds) != ["PodMonitor", "PrometheusRule"]:
                    problems.append(f"kubectl kustomize deploy/k8s/{name}: want a PodMonitor and a "
                                    f"PrometheusRule, got {kinds}")
                for o in crds:
                    if not o["metadata"].get("labels", {}).get("release"):
                        problems.append(f"kubectl kustomize deploy/k8s/{name}: {o['kind']} has no release label")
            elif crds:
                problems.append(f"kubectl kustomize deploy/k8s/{name}: the root alone renders "
                                f"{[o['kind'] for o in crds]}, which need the operator's CRDs")
            cms = {o["metadata"]["name"] for o in docs if o["kind"] == "ConfigMap"}
            for dep in (o for o in docs if o["kind"] == "Deployment"):
                for v in dep["spec"]["template"]["spec"].get("volumes", []):
                    cm = (v.get("configMap") or {}).get("name")
                    if cm and (cm not in cms or not re.search(r"-[a-z0-9]{10}$", cm)):
                        problems.append(f"kubectl kustomize deploy/k8s/{name}: volume {v['name']} mounts "
                                        f"ConfigMap {cm}, not a generated one with its hash suffix")
            print(f"ok    kubectl kustomize deploy/k8s/{name}: {', '.join(kinds)}")
        problems += render_documented_overlay(kubectl, tmp)
    return problems, True


def render_documented_overlay(kubectl, tmp):
    """The overlay docs/DEPLOY.md "Kubernetes" shows (the base, its monitoring
    component, a patch with another release name) renders as it says."""
    import subprocess
    text = open(os.path.join(ROOT, "docs", "DEPLOY.md"), encoding="utf-8").read()
    m = re.search(r"```yaml\n# my-overlay/kustomization.yaml\n(.*?)```", text, re.S)
    if not m:
        return ["docs/DEPLOY.md: no ```yaml block starting # my-overlay/kustomization.yaml"]
    d = os.path.join(tmp, "documented-overlay")
    os.makedirs(d)
    prefix = os.path.relpath(ROOT, d)
    overlay = m.group(1).replace("../deploy/", f"{prefix}/deploy/")
    with open(os.path.join(d, "kustomization.yaml"), "w", encoding="utf-8") as f:
        f.write(overlay)
    want = yaml.safe_load(overlay)
    r = subprocess.run([kubectl, "kustomize", d], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return [f"docs/DEPLOY.md's overlay does not render: {r.stderr.strip()[:400]}"]
    docs = [x for x in yaml.safe_load_all(r.stdout) if x]
    release = want["patches"][0]["patch"].split("value:")[-1].strip()
    problems = []
    for o in docs:
        labels = o["metadata"].get("labels", {})
        if o["apiVersion"].startswith("monitoring.coreos.com/") and labels.get("release") != release:
            problems.append(f"docs/DEPLOY.md's overlay: {o['kind']} has release {labels.get('release')}, "
                            f"the patch says {release}")
        if o["metadata"].get("namespace") != want.get("namespace"):
            problems.append(f"docs/DEPLOY.md's overlay: {o['kind']} is not in namespace {want.get('namespace')}")
    if not problems:
        print(f"ok    the overlay of docs/DEPLOY.md renders: {len(docs)} objects, release {release}")
    return problems


def self_test(loaded):
    """Each break must be caught; returns the breaks that were not."""
    def sidecar_readiness(l):
        c = next(c for c in find_in(l, "sidecar", "Deployment")["spec"]["template"]["spec"]["initContainers"])
        c["readinessProbe"] = {"httpGet": {"path": "/readyz", "port": "relay-http"}}

    def find_in(l, name, kind):
        return next(o for o in l[name][0] if o.get("kind") == kind)

    def pdb_selects_nothing(l):
        find_in(l, "base", "PodDisruptionBudget")["spec"]["selector"]["matchLabels"] = {"app": "nope"}

    def writable_root(l):
        c = find_in(l, "base", "Deployment")["spec"]["template"]["spec"]["containers"][0]
        c["securityContext"]["readOnlyRootFilesystem"] = False

    def rule_differs(l):
        r = find_in(l, "base+monitoring", "PrometheusRule")
        r["spec"]["groups"][0]["rules"][0]["expr"] = "vector(1)"

    def liveness_on_readyz(l):
        c = find_in(l, "base", "Deployment")["spec"]["template"]["spec"]["containers"][0]
        c["livenessProbe"]["httpGet"]["path"] = "/readyz"

    def literal_password(l):
        c = find_in(l, "base", "Deployment")["spec"]["template"]["spec"]["containers"][0]
        for e in c["env"]:
            if e["name"] == "ORDER_DB_PASSWORD":
                e.pop("valueFrom")
                e["value"] = "hunter2"

    def podmonitor_in_base(l):
        l["base"][0].append(copy.deepcopy(find_in(l, "base+monitoring", "PodMonitor")))

    def no_release_label(l):
        del find_in(l, "sidecar+monitoring", "PodMonitor")["metadata"]["labels"]["release"]

    missed = []
    for name, brk in (("a PodMonitor in the base itself", podmonitor_in_base),
                      ("a PodMonitor without the release label", no_release_label),("a /readyz readinessProbe on the native sidecar", sidecar_readiness),
                      ("a PodDisruptionBudget that selects nothing", pdb_selects_nothing),
                      ("a writable root filesystem", writable_root),
                      ("a PrometheusRule that differs from alerts.yml", rule_differs),
                      ("a livenessProbe on /readyz", liveness_on_readyz),
                      ("a password as a literal env value", literal_password)):
        broken = copy.deepcopy(loaded)
        brk(broken)
        caught = check_all(broken)
        print(("ok    " if caught else "FAIL  ") + f"self-test: {name} is caught"
              + (f" ({caught[0]})" if caught else ""))
        if not caught:
            missed.append(name)
    # A kustomization that lists a file that does not exist.
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "kustomization.yaml"), "w") as f:
            f.write("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                    "resources:\n  - missing.yaml\n")
        errs = []
        load_kustomization(d, errs)
        ok = any("missing.yaml does not exist" in e for e in errs)
        print(("ok    " if ok else "FAIL  ") + "self-test: a resource file that does not exist is caught")
        if not ok:
            missed.append("missing resource")
    return missed


def main():
    errors = []
    loaded = {}
    for name in VARIANTS:
        loaded[name] = load_variant(name, errors)
        n = len(loaded[name][0])
        print(f"deploy/k8s/{name}: {n} objects "
              f"({', '.join(sorted(o.get('kind', '?') for o in loaded[name][0]))}), "
              f"{len(loaded[name][1])} generated ConfigMap(s)")
    # Every kustomization under deploy/k8s is one of the roots or used by one.
    for d, _, files in os.walk(K8S):
        if "kustomization.yaml" in files and os.path.relpath(d, K8S) not in KNOWN:
            errors.append(f"{rel(d)}: a kustomization this check does not know; add it to ROOTS")
    for f in os.listdir(K8S):
        if f.endswith((".yaml", ".yml")):
            errors.append(f"deploy/k8s/{f}: a manifest outside every kustomization")
    errors += check_all(loaded)
    rendered, _ = kubectl_renders()
    errors += rendered
    errors += fleet_renders()
    missed = self_test(loaded) if "--self-test" in sys.argv else []
    for e in errors:
        print(f"FAIL  {e}")
    print(f"check_k8s: {'FAILED' if errors or missed else 'OK'} ({len(errors)} problems"
          f"{', self-test missed ' + str(len(missed)) if missed else ''})")
    return 1 if errors or missed else 0


if __name__ == "__main__":
    sys.exit(main())

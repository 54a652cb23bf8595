"""The layering rules of docs/architecture.md, over `cargo metadata` and the crates' sources."""

import json
import pathlib
import re
import sys

# Each workspace crate, and the workspace crates it may depend on (normal dependencies).
MAY_USE = {
    "countersign-proto": set(),
    "countersign-pack": {"countersign-proto"},
    "countersign-policy": {"countersign-proto"},
    "countersign-demo-world": {"countersign-pack", "countersign-proto"},
    "countersign-providers": {"countersign-pack", "countersign-proto"},
    "countersign-example-pack": {"countersign-pack", "countersign-proto"},
    "countersign-mcp-proxy": {"countersign-pack", "countersign-proto"},
    "countersign-agent-tools": {"countersign-pack", "countersign-proto"},
    "countersign-engine": {"countersign-pack", "countersign-policy", "countersign-proto"},
    "countersign-api": {"countersign-engine", "countersign-pack", "countersign-proto"},
    "countersign-embedded": {
        "countersign-api", "countersign-engine", "countersign-pack", "countersign-policy",
        "countersign-proto", "countersign-demo-world", "countersign-providers",
        "countersign-agent-tools",
    },
    "countersign-gateway": {
        "countersign-api", "countersign-engine", "countersign-pack", "countersign-policy",
        "countersign-proto", "countersign-demo-world", "countersign-providers",
        "countersign-embedded", "countersign-mcp-proxy",
    },
    "countersign-console": {"countersign-proto"},
    "countersign-cli": {"countersign-console", "countersign-proto"},
    "countersign-desktop": {"countersign-console", "countersign-proto", "countersign-embedded"},
}

# Packages that may not be anywhere in a crate's normal dependency graph.
NEVER = {
    "countersign-pack": {"axum", "rmcp", "lettre", "reqwest"},
    "countersign-policy": {"axum", "rmcp", "lettre", "reqwest", "sqlx", "tokio"},
    "countersign-engine": {"axum", "rmcp", "lettre", "reqwest"},
    "countersign-api": {"rmcp", "lettre", "reqwest"},
    "countersign-embedded": {"rmcp", "lettre", "countersign-gateway"},
    "countersign-mcp-proxy": {"axum", "lettre", "countersign-engine"},
    "countersign-agent-tools": {"axum", "rmcp", "lettre", "reqwest", "countersign-engine"},
    "countersign-desktop": {"rmcp", "lettre", "countersign-gateway"},
    "countersign-console": {"axum", "countersign-engine", "countersign-api"},
}


def main(path):
    meta = json.loads(pathlib.Path(path).read_text())
    packages = {p["id"]: p for p in meta["packages"]}
    members = {packages[i]["name"]: packages[i] for i in meta["workspace_members"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    breaches = []

    unknown = set(members) - set(MAY_USE) - {"countersign-e2e"}
    for name in sorted(unknown):
        breaches.append(f"{name} is not in tests/layering.py: say what it may depend on")

    def normal_deps(node_id):
        for dep in nodes[node_id]["deps"]:
            if any(k["kind"] is None for k in dep["dep_kinds"]):
                yield dep["pkg"]

    for name, allowed in MAY_USE.items():
        package = members.get(name)
        if package is None:
            breaches.append(f"{name} is missing from the workspace")
            continue
        for dep in normal_deps(package["id"]):
            dep_name = packages[dep]["name"]
            if dep_name in members and dep_name not in allowed:
                breaches.append(f"{name} depends on {dep_name}")
        seen, todo = set(), [package["id"]]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            todo.extend(normal_deps(current))
        reached = {packages[i]["name"] for i in seen}
        for forbidden in sorted(NEVER.get(name, set()) & reached):
            breaches.append(f"{name} reaches {forbidden}")

    for name, package in members.items():
        src = pathlib.Path(package["manifest_path"]).parent / "src"
        for cycle in module_cycles(src):
            breaches.append(f"{name}: modules import each other in a circle: {' -> '.join(cycle)}")
        for breach in folder_breaches(src):
            breaches.append(f"{name}: {breach}")

    if breaches:
        print("layering: " + "\nlayering: ".join(breaches), file=sys.stderr)
        return 1
    print(
        f"layering: {len(MAY_USE)} crates keep to their layers; no module circles; every folder"
        " is used through what it exports"
    )
    return 0


def module_cycles(src):
    """Circles among a crate's modules, file by file (`a/b.rs` is module `a::b`, `a/mod.rs` is
    `a`). The crate root (lib.rs, main.rs) is the crate's front: it may use every module and every
    module may use what it defines."""
    graph = module_graph(src)
    return cycles({m: {t for t in targets if t != m} for m, (targets, _) in graph.items()})


def folder_breaches(src):
    """References from one folder's modules (or a root module) into another folder that do not
    go through what that folder exports: a `pub mod` of its mod.rs, a name its mod.rs re-exports
    with `pub use` / `pub(crate) use`, or an item its mod.rs defines in the open."""
    graph = module_graph(src)
    exports = {}
    for path in src.rglob("mod.rs"):
        folder = module_of(path, src)
        exports[folder] = exported(path.read_text(), path.parent)
    out = []
    for module, (_, paths) in sorted(graph.items()):
        home = module.split("::")[0]
        for used in sorted(paths):
            parts = used.split("::")
            for depth in range(1, len(parts)):
                folder = "::".join(parts[:depth])
                if folder not in exports or module.startswith(folder + "::") or module == folder:
                    continue
                if home == folder.split("::")[0] and depth > 1:
                    continue
                if parts[depth] not in exports[folder]:
                    out.append(f"{module} uses {used}, which {folder} does not export")
                break
    return out


REEXPORT = re.compile(r"^\s*pub(?:\([^)]*\))?\s+use\s+[^;]+;", re.M)
MOD_DECL = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
DEFINED = re.compile(
    r"^pub(?:\(crate\))?\s+(?:async\s+)?(?:fn|struct|enum|const|static|type|trait)\s+(\w+)", re.M
)


def exported(text, folder=None):
    """What a folder's mod.rs (in `folder`) lets other folders use; `pub use child::*` exports
    what the child defines and re-exports in the open."""
    text = strip_comments(text)
    names = {m.group(2) for m in MOD_DECL.finditer(text) if (m.group(1) or "").strip() == "pub"}
    names |= set(DEFINED.findall(text))
    for m in re.finditer(r"^pub(?:\(crate\))?\s+use\s+([^;]+);", text, re.M):
        for item in leaves(m.group(1)):
            name = item.split(" as ")[-1].split("::")[-1].strip()
            child = folder / f"{item.split('::')[0].strip()}.rs" if folder else None
            if name == "*" and child is not None and child.exists():
                names |= exported(child.read_text())
            else:
                names.add(name)
    return names


def leaves(tree):
    """The paths a `use` tree names: `a::{b, c::{d}}` is `a::b`, `a::c::d`."""
    tree = tree.strip()
    brace = tree.find("{")
    if brace < 0:
        return [tree]
    prefix, body = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    out = []
    for item in split_top(body):
        for leaf in leaves(item):
            out.append(prefix + leaf if leaf != "self" else prefix.rstrip(":"))
    return out


def split_top(body):
    """`body` split at its top-level commas."""
    items, depth, current = [], 0, ""
    for ch in body:
        depth += (ch == "{") - (ch == "}")
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    items.append(current)
    return [i.strip() for i in items if i.strip()]


def module_of(path, src):
    parts = list(path.relative_to(src).parts)
    parts[-1] = parts[-1][:-3]
    if parts[-1] == "mod":
        parts.pop()
    return "::".join(parts)


def module_graph(src):
    """Each module (but the crate root) with the modules it uses and the `crate::` paths it
    names."""
    roots = {"lib.rs", "main.rs"}
    files = [p for p in src.rglob("*.rs") if p.relative_to(src).parts[0] not in roots]
    modules = {module_of(p, src): p for p in files}
    graph = {}
    for module, path in modules.items():
        text = strip_comments(path.read_text())
        # A re-export is a folder's door, not its code using what it names: no edge.
        code = REEXPORT.sub("", text)
        paths = set(used_paths(code))
        # A module's own children, named without `crate::` (`use events::EventKind` in mod.rs).
        for child in MOD_DECL.findall(text):
            if re.search(r"\b" + child[1] + r"::", code):
                paths.add(f"{module}::{child[1]}" if module else child[1])
        if path.name != "mod.rs" and "::" in module:
            parent = module.rsplit("::", 1)[0]
            for sibling in re.findall(r"\bsuper::(\w+)", code):
                paths.add(f"{parent}::{sibling}")
        targets = set()
        named = paths | set(used_paths(text))
        for used in paths:
            parts = used.split("::")
            for depth in range(len(parts), 0, -1):
                candidate = "::".join(parts[:depth])
                if candidate in modules:
                    targets.add(candidate)
                    break
        graph[module] = (targets, named)
    return graph


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def used_paths(text):
    """Every path named after `crate::`, groups unfolded: `crate::{a::{b}, d}` is `a::b`, `d`."""
    for match in re.finditer(r"\bcrate::", text):
        rest = text[match.end() :]
        if rest.startswith("{"):
            depth = 0
            for end, ch in enumerate(rest):
                depth += (ch == "{") - (ch == "}")
                if depth == 0:
                    break
            for leaf in leaves(rest[: end + 1]):
                if leaf:
                    yield leaf.split(" as ")[0].strip()
        else:
            path = re.match(r"\w+(?:::\w+)*", rest)
            if path:
                yield path.group(0)


def cycles(edges):
    """Strongly connected components of more than one module, each as a path that closes."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component) + [sorted(component)[0]])

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

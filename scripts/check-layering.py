#!/usr/bin/env python3
"""The module layering check (.ci/run runs it; issue 25.1).

Every module is src/<m>/ plus include/megasim/<m>/. An include of another module's header is a
dependency edge: "megasim/<m>/x.hpp" or, for private headers, "<m>/x.hpp" relative to src/.
The check fails (exit 1) when
  - the edges form a cycle,
  - a module includes a module that is not among the DEPS / PRIVATE_DEPS its CMakeLists.txt
    passes to megasim_module (or target_link_libraries for the CLI), so the CMake graph would
    understate the real one, or
  - a module includes one that comes later in MEGASIM_MODULES, the top-level CMakeLists.txt's
    list of modules from the lowest layer up (an upward include).
Run from anywhere: scripts/check-layering.py [REPO_ROOT]
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
top = (root / "CMakeLists.txt").read_text()
order = re.search(r"set\(MEGASIM_MODULES ([^)]*)\)", top).group(1).split()
rank = {m: i for i, m in enumerate(order)}

include_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module_of_include(path, here):
    parts = path.split("/")
    if parts[0] == "megasim" and len(parts) > 2 and parts[1] in rank:
        return parts[1]
    if parts[0] == "megasim" and len(parts) == 2:
        return "api"  # megasim/megasim.hpp, the user API header
    if len(parts) > 1 and parts[0] in rank:
        return parts[0]
    return here  # a header beside the source


def files_of(m):
    dirs = [root / "src" / m, root / "include" / "megasim" / m]
    out = [p for d in dirs if d.is_dir() for p in d.rglob("*") if p.suffix in (".cpp", ".hpp")]
    if m == "api":
        out.append(root / "include" / "megasim" / "megasim.hpp")
    return out


def declared_deps(m):
    text = ""
    for f in (root / "src" / m).glob("*.cmake"):
        text += f.read_text()
    cml = root / "src" / m / "CMakeLists.txt"
    if cml.exists():
        text += cml.read_text()
    return set(re.findall(r"megasim_(\w+)", text)) & set(order) - {m}


edges = {m: {} for m in order}  # module -> {dependency: first file that includes it}
for m in order:
    for f in files_of(m):
        for inc in include_re.findall(f.read_text(errors="replace")):
            dep = module_of_include(inc, m)
            if dep != m and dep in rank:
                edges[m].setdefault(dep, f.relative_to(root))

problems = []
for m in order:
    deps = declared_deps(m)
    for dep, where in sorted(edges[m].items()):
        if rank[dep] > rank[m]:
            problems.append(f"upward include: {m} -> {dep} ({where}); {dep} comes after {m} in MEGASIM_MODULES")
        if dep not in deps:
            problems.append(f"undeclared dependency: {m} -> {dep} ({where}) is not in src/{m}/CMakeLists.txt")

# Cycles (depth-first search over the include graph).
state = {}


def visit(m, path):
    state[m] = "open"
    for dep in sorted(edges[m]):
        if state.get(dep) == "open":
            cycle = path[path.index(dep):] + [dep]
            problems.append("include cycle: " + " -> ".join(cycle))
        elif dep not in state:
            visit(dep, path + [dep])
    state[m] = "done"


for m in order:
    if m not in state:
        visit(m, [m])

for p in problems:
    print("layering: " + p)
if problems:
    print(f"layering: FAIL ({len(problems)} problems)")
    sys.exit(1)
print(f"layering: ok ({len(order)} modules, {sum(len(e) for e in edges.values())} include edges, acyclic, all declared, none upward)")

"""Which transformer block each captured node belongs to, from the module
paths torch.export records (node.meta["nn_module_stack"]): the blocks are the
integer-indexed children of the module list with the most of them ("h.0",
"h.1", ... in nanoGPT, "model.layers.N" in Hugging Face models, "0", "1", ...
in an nn.Sequential). The importer writes the index as `weft.layer`, which
weft-remat's layer policies and its budget solver group by."""
import collections
import re

_INDEXED = re.compile(r"^(?:(.*)\.)?(\d+)$")


def _paths(node):
    stack = node.meta.get("nn_module_stack") or {}
    return [entry[0] for entry in stack.values() if isinstance(entry, tuple) and entry]


def block_layers(graph):
    """{node: block index} for the nodes inside a block of the graph's
    largest module list (at least two blocks); no entry for the others."""
    children = collections.defaultdict(set)  # list path -> indices seen
    for node in graph.nodes:
        for path in _paths(node):
            match = _INDEXED.match(path)
            if match:
                children[match.group(1) or ""].add(int(match.group(2)))
    if not children:
        return {}
    container, indices = max(children.items(), key=lambda kv: (len(kv[1]), -len(kv[0])))
    if len(indices) < 2:
        return {}
    prefix = container + "." if container else ""
    layers = {}
    for node in graph.nodes:
        for path in _paths(node):
            if path.startswith(prefix):
                head = path[len(prefix):].split(".", 1)[0]
                if head.isdigit() and int(head) in indices:
                    layers[node] = int(head)
                    break
    return layers

"""How ``--jobs N`` shares a warm-up's parts among N processes (bnstudy.tools.warmup.part_tasks): every
part of the network's runs in exactly one process, and the MLP's training loop, its longest compile,
has the first process to itself."""

import pytest

from bnstudy.tools import warmup


@pytest.mark.parametrize("network", warmup.NETWORKS)
@pytest.mark.parametrize("parts", [1, 2, 3, 4])
def test_every_part_runs_in_exactly_one_process(network, parts):
    shares = [warmup.part_tasks(network, k, parts) for k in range(parts)]
    ran = [task for share in shares for task in share]
    assert sorted(ran, key=warmup.PARTS.index) == list(warmup.network_parts(network))


def test_the_mlps_training_loop_compiles_alone_beside_the_rest():
    assert warmup.part_tasks("mlp", 0, 2) == (warmup._training,)
    assert warmup.part_tasks("mlp", 1, 2) == tuple(p for p in warmup.network_parts("mlp") if p is not warmup._training)
    assert warmup.part_tasks("mlp", 0, 1) == warmup.network_parts("mlp")
    # the convolutions' split is the plain one: every second part
    assert warmup.part_tasks("conv", 1, 2) == warmup.PARTS[1::2]

"""The CCQ operator against its definition: chunked vs per-position float64 reference vs step-by-step."""

import pytest
import torch

from ccq_eval.ops.ccq import CCQState, contract_query, contract_query_step, naive_contract_query


def _inputs(B=2, T=150, H=3, D=8, key_mean=5.0, dtype=torch.float64):
    q = torch.randn(B, T, H, D, dtype=dtype)
    k = torch.randn(B, T, H, D, dtype=dtype) * 2 + key_mean
    lam = torch.rand(B, T, H, dtype=dtype)
    return q, k, lam


@pytest.mark.parametrize("sigma_scale", ["none", "trace"])
@pytest.mark.parametrize("T,chunk", [(150, 16), (64, 64), (1, 64), (130, 64)])
def test_chunked_matches_per_position_reference(sigma_scale, T, chunk):
    q, k, lam = _inputs(T=T)
    ref = naive_contract_query(q, k, lam, sigma_scale)
    out, _ = contract_query(q, k, lam, chunk_size=chunk, sigma_scale=sigma_scale)
    torch.testing.assert_close(out, ref, rtol=1e-9, atol=1e-9)


def test_float32_matches_reference():
    q, k, lam = _inputs(T=200, dtype=torch.float32)
    out, _ = contract_query(q, k, lam)
    assert out.dtype == torch.float32
    ref = naive_contract_query(q, k, lam)
    rel = (out.double() - ref).norm(dim=-1) / ref.norm(dim=-1)
    assert rel.max() < 1e-5


def test_lambda_zero_leaves_query_unchanged():
    q, k, _ = _inputs(dtype=torch.float32)
    out, _ = contract_query(q, k, torch.zeros(q.shape[:3]))
    assert torch.equal(out, q)


def test_contraction_really_shrinks_dense_directions():
    # all keys along e0 with spread: Sigma is rank one along e0, so only q's e0 part shrinks
    T, D = 400, 4
    k = torch.zeros(1, T, 1, D, dtype=torch.float64)
    k[..., 0] = torch.randn(1, T, 1, dtype=torch.float64)
    q = torch.ones(1, T, 1, D, dtype=torch.float64)
    out, _ = contract_query(q, k, torch.ones(1, T, 1, dtype=torch.float64))
    var = torch.stack([k[0, : t + 1, 0, 0].var(unbiased=False) for t in range(T)])
    torch.testing.assert_close(out[0, :, 0, 0], 1 - var)
    torch.testing.assert_close(out[0, :, 0, 1:], torch.ones(T, D - 1, dtype=torch.float64))


@pytest.mark.parametrize("split", [1, 37, 64, 65, 128])
def test_carried_state_equals_one_call(split):
    q, k, lam = _inputs(T=150)
    whole, final = contract_query(q, k, lam, output_final_state=True, chunk_size=64)
    first, state = contract_query(q[:, :split], k[:, :split], lam[:, :split], output_final_state=True, chunk_size=64)
    second, final2 = contract_query(q[:, split:], k[:, split:], lam[:, split:], initial_state=state,
                                    output_final_state=True, chunk_size=64)
    torch.testing.assert_close(torch.cat([first, second], 1), whole, rtol=1e-10, atol=1e-10)
    assert torch.equal(final2.count, final.count)
    torch.testing.assert_close(final2.cov, final.cov, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("sigma_scale", ["none", "trace"])
def test_step_by_step_across_chunk_boundaries(sigma_scale):
    q, k, lam = _inputs(T=140)
    whole, final = contract_query(q, k, lam, output_final_state=True, chunk_size=64, sigma_scale=sigma_scale)
    # prefill 50 tokens, then decode one at a time across the 64 and 128 boundaries
    _, state = contract_query(q[:, :50], k[:, :50], lam[:, :50], output_final_state=True, sigma_scale=sigma_scale)
    outs = [whole[:, :50]]
    for t in range(50, 140):
        o, state = contract_query_step(q[:, t : t + 1], k[:, t : t + 1], lam[:, t : t + 1], state, sigma_scale)
        outs.append(o)
    torch.testing.assert_close(torch.cat(outs, 1), whole, rtol=1e-10, atol=1e-10)
    assert state.count.tolist() == [140, 140]
    torch.testing.assert_close(state.mean, final.mean)
    torch.testing.assert_close(state.cov, final.cov)


def test_final_state_is_the_key_statistics():
    q, k, lam = _inputs(T=90)
    _, state = contract_query(q, k, lam, output_final_state=True)
    for b in range(2):
        for h in range(3):
            keys = k[b, :, h]
            torch.testing.assert_close(state.mean[b, h], keys.mean(0))
            torch.testing.assert_close(state.cov[b, h], torch.cov(keys.T, correction=0))
    assert state.mean.dtype == torch.float64
    q32, k32, lam32 = (x.float() for x in (q, k, lam))
    _, state32 = contract_query(q32, k32, lam32, output_final_state=True)
    assert state32.cov.dtype == torch.float32 and state32.count.dtype == torch.int64


def test_cu_seqlens_packs_independent_sequences():
    lengths = [40, 1, 100, 64]
    H, D = 2, 8
    seqs = [_inputs(B=1, T=n, H=H, D=D) for n in lengths]
    q, k, lam = (torch.cat([s[i] for s in seqs], dim=1) for i in range(3))
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()])
    # each packed sequence may carry its own earlier keys
    prefixes = [torch.randn(1, n, H, D, dtype=torch.float64) + 3 for n in (5, 0, 20, 2)]
    states = []
    for prefix in prefixes:
        if prefix.shape[1]:
            _, s = contract_query(torch.zeros_like(prefix), prefix, torch.zeros(prefix.shape[:3], dtype=torch.float64),
                                  output_final_state=True)
        else:
            s = CCQState(torch.zeros(1, dtype=torch.int64), torch.zeros(1, H, D, dtype=torch.float64),
                         torch.zeros(1, H, D, D, dtype=torch.float64))
        states.append(s)
    out, final = contract_query(q, k, lam, initial_state=CCQState.cat(states), output_final_state=True,
                                cu_seqlens=cu)
    for i, (s, prefix) in enumerate(zip(seqs, prefixes)):
        ref = naive_contract_query(s[0], s[1], s[2], prefix_keys=prefix if prefix.shape[1] else None)
        torch.testing.assert_close(out[:, cu[i] : cu[i + 1]], ref, rtol=1e-9, atol=1e-9)
    assert final.count.tolist() == [45, 1, 120, 66]


def test_float32_accuracy_with_large_key_mean_at_20k():
    """Keys ~ N(10, 1), d = 64, T = 20480: relative error <= 1e-4 against float64 (the issue's bound)."""
    B, T, H, D = 1, 20480, 2, 64
    q = torch.randn(B, T, H, D)
    k = torch.randn(B, T, H, D) + 10
    lam = torch.rand(B, T, H)
    out, _ = contract_query(q, k, lam)
    worst = 0.0
    n = torch.arange(1, T + 1, dtype=torch.float64)[:, None]
    for h in range(H):
        # float64 reference by the definition: prefix sums of outer products about the exact mean
        keys = k[0, :, h].double()
        centred = keys - keys.mean(0)
        mean_t = centred.cumsum(0) / n
        running = torch.zeros(D, D, dtype=torch.float64)
        for s in range(0, T, 1024):
            block = centred[s : s + 1024]
            second = torch.einsum("ti,tj->tij", block, block).cumsum(0) + running
            running = second[-1].clone()
            sigma = second / n[s : s + 1024, :, None] - mean_t[s : s + 1024, :, None] * mean_t[s : s + 1024, None, :]
            qs = q[0, s : s + 1024, h].double()
            ref = qs - lam[0, s : s + 1024, h, None].double() * torch.einsum("tij,tj->ti", sigma, qs)
            rel = (out[0, s : s + 1024, h].double() - ref).norm(dim=-1) / ref.norm(dim=-1)
            worst = max(worst, rel.max().item())
    assert worst <= 1e-4, worst


def test_gradcheck_float64():
    q, k, lam = _inputs(B=1, T=20, H=2, D=3)
    for x in (q, k, lam):
        x.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b, c: contract_query(a, b, c, chunk_size=8)[0], (q, k, lam))
    assert torch.autograd.gradcheck(
        lambda a, b, c: contract_query(a, b, c, chunk_size=8, sigma_scale="trace")[0], (q, k, lam))


def test_bad_arguments_are_rejected():
    q, k, lam = _inputs(T=10)
    with pytest.raises(ValueError, match="sigma_scale"):
        contract_query(q, k, lam, sigma_scale="frobenius")
    with pytest.raises(ValueError, match="do not fit"):
        contract_query(q, k[:, :5], lam)
    with pytest.raises(ValueError, match="one token"):
        contract_query_step(q, k, lam, None)


def test_blocked_long_sequences_equal_one_dense_pass(monkeypatch):
    """Past BLOCK_TOKENS the operator runs block by block, carrying the statistics: same numbers."""
    import ccq_eval.ops.ccq.state as ccq_module

    q, k, lam = _inputs(B=1, T=300, H=2, D=4)
    monkeypatch.setattr(ccq_module, "BLOCK_TOKENS", 1 << 20)
    whole, whole_state = contract_query(q, k, lam, output_final_state=True)
    monkeypatch.setattr(ccq_module, "BLOCK_TOKENS", 128)
    blocked, blocked_state = contract_query(q, k, lam, output_final_state=True)
    torch.testing.assert_close(blocked, whole, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(blocked_state.cov, whole_state.cov, rtol=1e-10, atol=1e-10)
    assert blocked_state.count.tolist() == [300]


def test_a_decoding_step_updates_sigma_in_place_without_grad_and_leaves_it_alone_with_grad():
    q, k, lam = _inputs(T=12, dtype=torch.float32)
    _, state = contract_query(q[:, :10], k[:, :10], lam[:, :10], output_final_state=True)
    before = state.cov.clone()
    with torch.no_grad():
        _, after = contract_query_step(q[:, 10:11], k[:, 10:11], lam[:, 10:11], state)
    assert after.cov.data_ptr() == state.cov.data_ptr() and not torch.equal(state.cov, before)
    _, full = contract_query(q[:, :11], k[:, :11], lam[:, :11], output_final_state=True)
    torch.testing.assert_close(after.cov, full.cov, rtol=1e-5, atol=1e-6)
    kept = after.cov.clone()
    _, graded = contract_query_step(q[:, 11:12], k[:, 11:12], lam[:, 11:12], after)
    assert graded.cov.data_ptr() != after.cov.data_ptr() and torch.equal(after.cov, kept)


def _packed(lengths, H=2, D=4, dtype=torch.float64, with_states=True):
    seqs = [_inputs(B=1, T=n, H=H, D=D, dtype=dtype) for n in lengths]
    q, k, lam = (torch.cat([s[i] for s in seqs], dim=1) for i in range(3))
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()])
    states = None
    if with_states:  # every other sequence carries earlier keys, the others start fresh
        parts = []
        for i in range(len(lengths)):
            prefix = torch.randn(1, 3 + i, H, D, dtype=dtype) * 2 + 4
            _, s = contract_query(torch.zeros_like(prefix), prefix, torch.zeros(prefix.shape[:3], dtype=dtype),
                                  output_final_state=True)
            if i % 2:
                s = CCQState(torch.zeros(1, dtype=torch.int64), torch.zeros_like(s.mean), torch.zeros_like(s.cov))
            parts.append(s)
        states = CCQState.cat(parts)
    return q, k, lam, cu, states


@pytest.mark.parametrize("block", [2048, 40])
def test_packed_sequences_as_one_computation_equal_each_sequence_alone(monkeypatch, block):
    """Empty sequences, one-token ones, ones crossing blocks of slots (block 40 = a few chunks of 16): every token
    and every final state as the sequence computed alone."""
    import ccq_eval.ops.ccq.state as ccq_module

    lengths = [37, 0, 1, 16, 90, 0, 33]
    q, k, lam, cu, states = _packed(lengths)
    monkeypatch.setattr(ccq_module, "BLOCK_TOKENS", block)
    out, final = contract_query(q, k, lam, initial_state=states, output_final_state=True, cu_seqlens=cu,
                                chunk_size=16, sigma_scale="trace")
    monkeypatch.setattr(ccq_module, "BLOCK_TOKENS", 2048)
    for i, n in enumerate(lengths):
        start, end = int(cu[i]), int(cu[i + 1])
        alone, alone_state = contract_query(q[:, start:end], k[:, start:end], lam[:, start:end],
                                            initial_state=states.select(i), output_final_state=True,
                                            chunk_size=16, sigma_scale="trace") if n else (None, states.select(i))
        if n:
            torch.testing.assert_close(out[:, start:end], alone, rtol=1e-9, atol=1e-9)
        assert final.count[i] == alone_state.count[0]
        torch.testing.assert_close(final.mean[i], alone_state.mean[0], rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(final.cov[i], alone_state.cov[0], rtol=1e-9, atol=1e-9)


def test_packed_float32_within_the_bound_of_the_float64_definition():
    lengths = [700, 5, 300, 1200]
    q, k, lam, cu, _ = _packed(lengths, H=2, D=16, dtype=torch.float32, with_states=False)
    out, _ = contract_query(q, k, lam, cu_seqlens=cu)
    for i in range(len(lengths)):
        start, end = int(cu[i]), int(cu[i + 1])
        ref = naive_contract_query(q[:, start:end], k[:, start:end], lam[:, start:end]) if end - start <= 300 else None
        if ref is None:  # the long ones against the dense float64 form (itself equal to the definition above)
            ref, _ = contract_query(q[:, start:end].double(), k[:, start:end].double(), lam[:, start:end].double())
        rel = (out[:, start:end].double() - ref).norm(dim=-1) / ref.norm(dim=-1)
        assert rel.max() <= 1e-4, (i, rel.max().item())


def _dispatched_ops(fn) -> list[str]:
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with Ops():
        fn()
    return seen


@pytest.mark.parametrize("gpu_blocks", [False, True])
def test_packed_read_reads_nothing_back_and_dispatches_the_same_ops_for_2_and_32_sequences(gpu_blocks, monkeypatch):
    """The ops do not grow with the number of sequences (no loop over them) and none reads a value back to the host
    (a GPU would wait for it in every CCQ layer); in the CPU's blocks and in a GPU's."""
    from tests.host_reads import host_reads

    if gpu_blocks:
        from ccq_eval.ops.ccq import packed

        monkeypatch.setattr(packed, "packed_block_tokens", lambda device: packed.PACKED_BLOCK_TOKENS)

    T, H, D = 4096, 2, 8
    runs = {}
    for n in (2, 32):
        lengths = [T // n] * n
        q, k, lam, cu, states = _packed(lengths, H=H, D=D, dtype=torch.float32)
        with torch.no_grad(), host_reads() as found:
            ops = _dispatched_ops(lambda: contract_query(q, k, lam, initial_state=states, output_final_state=True,
                                                         cu_seqlens=cu))
        assert found == [], f"{len(found)} host reads, the first at:\n{found[0]}"
        runs[n] = ops
    assert runs[2] == runs[32], (len(runs[2]), len(runs[32]))


def test_gradcheck_packed_float64():
    lengths = [7, 0, 12, 3]
    q, k, lam, cu, states = _packed(lengths, H=1, D=3)
    for x in (q, k, lam):
        x.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda a, b, c: contract_query(a, b, c, chunk_size=4, cu_seqlens=cu, initial_state=states)[0], (q, k, lam))

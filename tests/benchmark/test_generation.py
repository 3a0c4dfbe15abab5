"""The decoding-cost benchmark: runs end to end on tiny sizes; the state stays fixed while the KV cache grows."""

from fastformer.benchmark.generation import run


def test_state_is_constant_and_the_key_value_cache_grows():
    tiny = dict(hidden_size=32, num_attention_heads=4, intermediate_size=64, num_hidden_layers=2)
    result = run(contexts=(40, 160), new_tokens=3, prefill_chunk=64, vocab_size=300, out=None, **tiny)
    rows = {(r["architecture"], r["context"]): r for r in result["rows"]}
    assert rows["fastformer", 40]["cache_bytes"] == rows["fastformer", 160]["cache_bytes"]
    # GPT-2 keeps keys and values of every token: 2 x layers x hidden floats per token
    for context in (40, 160):
        assert rows["gpt2", context]["cache_bytes"] == context * 2 * 2 * 32 * 4
    assert all(r["decode_ms_median"] > 0 and r["prefill_s"] > 0 for r in result["rows"])
    assert result["machine"]["torch"] and result["parameters"]["fastformer"] > 0

"""The opbench workloads written in JAX, from their specs (workloads/*/workload.toml and
WORKLOADS.md), for cross-checking opbench's references and timing XLA:CPU beside the baselines.

Each entry maps a workload id to a function taking the inputs in the order of the workload's
[[inputs]] (as `opbench dump` writes them) and returning a tuple of its outputs in [[outputs]] order.
Everything is fp32, as on opbench's cpu target. Workloads not yet written here are listed by
`missing()`; the tools say so rather than skip them silently.
"""
import math

import jax
import jax.numpy as jnp

SQRT_2_OVER_PI = 0.7978845608028654


def gelu_tanh(t):
    return 0.5 * t * (1.0 + jnp.tanh(SQRT_2_OVER_PI * (t + 0.044715 * t**3)))


def softplus(t):
    return jnp.maximum(t, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(t)))


def mish(t):
    return t * jnp.tanh(softplus(t))


def hp_dot(a, b):
    """fp32 matmul at full precision (XLA:CPU computes fp32 anyway; this keeps TPUs/GPUs honest)."""
    return jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)


def causal_attention(q, k, v):
    """q, k, v: (..., S, D); the score of a masked pair is replaced by -1e9, as the specs say."""
    d = q.shape[-1]
    s = jnp.einsum("...id,...jd->...ij", q, k, precision=jax.lax.Precision.HIGHEST) * (d ** -0.5)
    n = s.shape[-1]
    mask = jnp.arange(n)[None, :] > jnp.arange(n)[:, None]
    s = jnp.where(mask, -1e9, s)
    p = jax.nn.softmax(s, axis=-1)
    return jnp.einsum("...ij,...jd->...id", p, v, precision=jax.lax.Precision.HIGHEST)


def w1p(query, key, value):  # [B, H, S, D]
    return (causal_attention(query, key, value),)


def w2p(query, key, value):  # [B, S, H, D], query head h reads kv head h // G
    g = query.shape[2] // key.shape[2]
    k = jnp.repeat(key, g, axis=2)
    v = jnp.repeat(value, g, axis=2)
    out = causal_attention(query.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3))
    return (out.transpose(0, 2, 1, 3),)


def w8p(A, B):
    return (hp_dot(A, B),)


def w9p(x, Wg, Wu, Wd):
    g = hp_dot(x, Wg)
    u = hp_dot(x, Wu)
    return (hp_dot(jax.nn.silu(g) * u, Wd),)


def w12p(x, scale):
    m = jnp.mean(x * x, axis=-1, keepdims=True)
    return (x * jax.lax.rsqrt(m + 1e-5) * scale,)


def w13p(hidden, W, labels):
    z = hp_dot(hidden, W)
    lse = jax.nn.logsumexp(z, axis=-1)
    picked = jnp.take_along_axis(z, labels.astype(jnp.int32)[:, None], axis=-1)[:, 0]
    return (lse - picked,)


def linear(x, W, b):  # W stored (in, out)
    return hp_dot(x, W) + b


def linear_t(x, W, b=None):  # W stored (out, in)
    h = hp_dot(x, W.T)
    return h if b is None else h + b


def w19k(x, W, b):
    return (jnp.maximum((linear(x, W, b) - 2.0) * 1.5, 0.0),)


def w20k(x, W, b):
    t = 2.0 * linear(x, W, b)
    return (jnp.where(t >= 0, t, 0.1 * t),)


def w21k(x, W):
    y = linear_t(x, W)
    return (1.5 * jnp.sum(y / 2.0, axis=1, keepdims=True),)


def w27k(x, W, b):
    return (mish(mish(linear(x, W, b))),)


def w30k(x, W, b):
    h = linear(x, W, b)
    return (0.5 * h + h,)


def w31k(x, W, bn_weight, bn_bias):
    h = linear_t(x, W)
    mu = jnp.mean(h, axis=0)
    var = jnp.mean((h - mu) ** 2, axis=0)
    t = (h - mu) / jnp.sqrt(var + 1e-5) * bn_weight + bn_bias
    return (jnp.maximum(gelu_tanh(t), 0.0),)


def w32k(x, W1, b1, W2, b2):
    s = jax.nn.sigmoid(linear_t(x, W1, b1))
    return (jax.nn.logsumexp(linear_t(s, W2, b2), axis=-1),)


def w35k(x, W, b):
    t = jnp.clip(0.5 * linear(x, W, b), -2.0, 2.0)
    return (gelu_tanh(t),)


def w36k(x, W, b):
    return (jnp.sum(jax.nn.sigmoid(linear(x, W, b)), axis=1, keepdims=True),)


def w37k(x, W, b):
    h = linear(x, W, b)
    return (2.0 * h * jax.nn.sigmoid(h),)


def w38k(x, W, b):
    return (jax.nn.softmax(linear_t(x, W, b), axis=-1),)


def w41k(x, W, b):
    return (jnp.maximum(linear(x, W, b), 0.0),)


def w42k(x, W, b):
    h = linear(x, W, b)
    return (gelu_tanh(h - jnp.max(h, axis=1, keepdims=True)),)


def w44k(x, W, b):
    return (gelu_tanh(linear(x, W, b) / 10.0),)


def w47k(x, W, b, add_value):
    h = linear(x, W, b) + add_value
    u = jnp.tanh(h * jax.nn.sigmoid(h))
    return (jnp.clip(gelu_tanh(u), -1.0, 1.0),)


def w48k(x, W, lb, bn_scale, bn_bias, bn_mean, bn_var, bias):
    h = linear(x, W, lb)
    y = bn_scale * (h - bn_mean) / jnp.sqrt(bn_var + 1e-5) + bn_bias
    t = (y + bias) / 2.0
    return (t * jax.nn.sigmoid(t),)


def w49k(x, W, b):
    h = linear(x, W, b)
    p = h.reshape(h.shape[0], -1, 16).mean(axis=-1)
    return (jnp.max(2.0 * gelu_tanh(p), axis=1),)


def w50k(x, W, b):
    return (jax.nn.softmax(gelu_tanh(linear(x, W, b)), axis=-1),)


def w14p(x, W, group_sizes):
    # jax.lax.ragged_dot is the operation JAXBench's function calls: rows of x in consecutive groups,
    # group g multiplied by W[g]; rows past the sum of the sizes give 0.
    return (jax.lax.ragged_dot(x, W, group_sizes.astype(jnp.int32), precision=jax.lax.Precision.HIGHEST),)


def group_norm_rows(h, groups, weight, bias):
    m, n = h.shape
    hg = h.reshape(m, groups, n // groups)
    mu = hg.mean(axis=-1, keepdims=True)
    var = ((hg - mu) ** 2).mean(axis=-1, keepdims=True)
    return ((hg - mu) / jnp.sqrt(var + 1e-5)).reshape(m, n) * weight + bias


def w23k(x, W, b):
    return (jnp.sum(linear_t(x, W, b), axis=1, keepdims=True),)  # the four length-1 post-ops are identities


def w24k(x, W, b):
    t = 2.0 * linear_t(x, W, b)
    t = jnp.clip(t + t, -10.0, 10.0)
    L = jax.nn.logsumexp(t, axis=1, keepdims=True)
    return (L * mish(L),)


def w29k(x, W, b, gn_weight, gn_bias):
    h = hp_dot(x, W)
    s = h * jax.nn.sigmoid(h) + b
    return (group_norm_rows(s, 64, gn_weight, gn_bias),)


def w40k(x, W, lb, gn_weight, gn_bias, bias):
    y = group_norm_rows(linear_t(x, W, lb), W.shape[0] // 16, gn_weight, gn_bias)
    r = jnp.min(y, axis=1)  # (M,)
    return (r[None, None, :, None] + bias,)  # (1, N, M, 1)


def w43k(x, W, b, bn_scale, bn_bias, bn_mean, bn_var, scale):
    h = linear(x, W, b)
    z = scale * (bn_scale * (h - bn_mean) / jnp.sqrt(bn_var + 1e-5) + bn_bias)
    return (jax.nn.softmax(z, axis=-1),)


def w45k(x, W, b, gn_weight, gn_bias, mw):
    y = group_norm_rows(linear_t(x, W, b), W.shape[0] // 32, gn_weight, gn_bias)
    s = jax.nn.silu(y) * mw
    return (jax.nn.silu(s),)


WORKLOADS = {
    "1p_Flash_Attention": w1p,
    "2p_GQA_Attention": w2p,
    "8p_GEMM": w8p,
    "9p_SwiGLU_MLP": w9p,
    "12p_RMSNorm": w12p,
    "13p_Cross_Entropy": w13p,
    "19k_Matmul_Subtract_Multiply_ReLU": w19k,
    "20k_Gemm_Multiply_LeakyReLU": w20k,
    "21k_Gemm_Divide_Sum_Scaling": w21k,
    "27k_Matmul_Mish_Mish": w27k,
    "30k_Matmul_Scaling_ResidualAdd": w30k,
    "31k_Gemm_BatchNorm_GELU_ReLU": w31k,
    "32k_Gemm_Sigmoid_LogSumExp": w32k,
    "35k_Gemm_Scaling_Hardtanh_GELU": w35k,
    "36k_Matmul_Sigmoid_Sum": w36k,
    "37k_Matmul_Swish_Scaling": w37k,
    "38k_Matmul_Dropout_Softmax": w38k,
    "41k_Gemm_Add_ReLU": w41k,
    "42k_Gemm_Max_Subtract_GELU": w42k,
    "44k_Matmul_Divide_GELU": w44k,
    "47k_Matmul_Add_Swish_Tanh_GELU_Hardtanh": w47k,
    "48k_Matmul_BatchNorm_BiasAdd_Divide_Swish": w48k,
    "49k_Matmul_AvgPool_GELU_Scale_Max": w49k,
    "50k_Matmul_GELU_Softmax": w50k,
    "14p_Ragged_Dot": w14p,
    "23k_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp": w23k,
    "24k_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish": w24k,
    "29k_Matmul_Swish_Sum_GroupNorm": w29k,
    "40k_Gemm_GroupNorm_Min_BiasAdd": w40k,
    "43k_Gemm_BatchNorm_Scaling_Softmax": w43k,
    "45k_Gemm_GroupNorm_Swish_Multiply_Swish": w45k,
}


def missing(all_ids):
    """The workload ids of the suite that have no JAX function here yet."""
    return [w for w in all_ids if w not in WORKLOADS]

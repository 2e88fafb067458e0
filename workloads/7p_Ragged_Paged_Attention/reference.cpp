// 7p_Ragged_Paged_Attention reference: for every active sequence (i < num_seqs) and each of its query
// rows and heads, a softmax over all L = PS·PPS key slots of the sequence (t > P_r or t >= kv_len
// replaced by -0.7·FLT_MAX) of the keys gathered through the page table, in double. Rows of no active
// sequence are 0.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// The L scores / probabilities of one (row, head) and the D accumulators, in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& kv = call->inputs[1];
  const int64_t PS = kv.shape[1], D = kv.shape[3], PPS = call->inputs[3].shape[1];
  return uint64_t(PS * PPS + D) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const ob_tensor& kv = call->inputs[1];
  const int64_t T = q.shape[0], Hq = q.shape[1], D = q.shape[2];
  const int64_t PS = kv.shape[1], Hkv = kv.shape[2] / 2, PPS = call->inputs[3].shape[1];
  const int64_t L = PS * PPS, G = Hq / Hkv;
  const float* Q = static_cast<const float*>(q.data);
  const float* KV = static_cast<const float*>(kv.data);
  const int32_t* kv_lens = static_cast<const int32_t*>(call->inputs[2].data);
  const int32_t* pages = static_cast<const int32_t*>(call->inputs[3].data);
  const int32_t* cu_q_lens = static_cast<const int32_t*>(call->inputs[4].data);
  const int32_t num_seqs = static_cast<const int32_t*>(call->inputs[5].data)[0];
  float* O = static_cast<float*>(call->outputs[0].data);
  double* p = static_cast<double*>(call->workspace);  // (L)
  double* acc = p + L;                                // (D)
  const double scale = 1.0 / std::sqrt(double(D));
  const double masked = -0.7 * 3.4028234663852886e38;  // -0.7·FLT_MAX
  for (int64_t e = 0; e < T * Hq * D; ++e) O[e] = 0.0f;  // rows of no active sequence stay zero
  for (int64_t i = 0; i < num_seqs; ++i) {
    const int64_t q_start = cu_q_lens[i], L_q = cu_q_lens[i + 1] - q_start, L_kv = kv_lens[i];
    for (int64_t r = 0; r < L_q; ++r) {
      const int64_t pos = L_kv - L_q + r;  // absolute position of query row r
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t g = h / G;
        const float* qv = Q + ((q_start + r) * Hq + h) * D;
        // Row (page, slot, combined head c) of kv_pages for key position t of sequence i.
        auto row = [&](int64_t t, int64_t c) {
          return ((int64_t(pages[i * PPS + t / PS]) * PS + t % PS) * 2 * Hkv + c) * D;
        };
        for (int64_t t = 0; t < L; ++t) {
          const float* kt = KV + row(t, 2 * g);
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += double(qv[d]) * double(kt[d]);
          p[t] = (t > pos || t >= L_kv) ? masked : dot * scale;
        }
        double m = p[0];
        for (int64_t t = 1; t < L; ++t) m = std::fmax(m, p[t]);
        double sum = 0.0;
        for (int64_t t = 0; t < L; ++t) {
          p[t] = std::exp(p[t] - m);
          sum += p[t];
        }
        for (int64_t d = 0; d < D; ++d) acc[d] = 0.0;
        for (int64_t t = 0; t < L; ++t) {
          const float* vt = KV + row(t, 2 * g + 1);
          for (int64_t d = 0; d < D; ++d) acc[d] += p[t] * double(vt[d]);
        }
        for (int64_t d = 0; d < D; ++d) O[((q_start + r) * Hq + h) * D + d] = float(acc[d] / sum);
      }
    }
  }
  return 0;
}

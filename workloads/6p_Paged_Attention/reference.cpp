// 6p_Paged_Attention reference: per sequence s and query head h, softmax over all L = PS·PPS key
// positions (t >= kv_lens[s] replaced by -1e30) of the keys gathered through the page table, in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// The L scores / probabilities of one (sequence, head) and the D accumulators, in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& k = call->inputs[1];
  const int64_t PS = k.shape[1], D = k.shape[3], PPS = call->inputs[4].shape[1];
  return uint64_t(PS * PPS + D) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const ob_tensor& kp = call->inputs[1];
  const int64_t N = q.shape[0], Hq = q.shape[1], D = q.shape[2];
  const int64_t PS = kp.shape[1], Hkv = kp.shape[2], PPS = call->inputs[4].shape[1];
  const int64_t L = PS * PPS, G = Hq / Hkv;
  const float* Q = static_cast<const float*>(q.data);
  const float* K = static_cast<const float*>(kp.data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  const int32_t* kv_lens = static_cast<const int32_t*>(call->inputs[3].data);
  const int32_t* pages = static_cast<const int32_t*>(call->inputs[4].data);
  const int32_t* cu_q_lens = static_cast<const int32_t*>(call->inputs[5].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  double* p = static_cast<double*>(call->workspace);  // (L)
  double* acc = p + L;                                // (D)
  const double scale = 1.0 / std::sqrt(double(D));
  const double masked = -1e30;
  for (int64_t s = 0; s < N; ++s) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t g = h / G;
      const float* qv = Q + (int64_t(cu_q_lens[s]) * Hq + h) * D;
      // Row (page, slot, g) of k_pages / v_pages for logical position t of sequence s.
      auto row = [&](int64_t t) { return ((int64_t(pages[s * PPS + t / PS]) * PS + t % PS) * Hkv + g) * D; };
      for (int64_t t = 0; t < L; ++t) {
        const float* kt = K + row(t);
        double dot = 0.0;
        for (int64_t d = 0; d < D; ++d) dot += double(qv[d]) * double(kt[d]);
        p[t] = (t >= kv_lens[s]) ? masked : dot * scale;
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
        const float* vt = V + row(t);
        for (int64_t d = 0; d < D; ++d) acc[d] += p[t] * double(vt[d]);
      }
      for (int64_t d = 0; d < D; ++d) O[(s * Hq + h) * D + d] = float(acc[d] / sum);
    }
  }
  return 0;
}

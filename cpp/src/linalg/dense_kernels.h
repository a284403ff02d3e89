// Dense double-precision kernels shared by CMA-ES (cma_es.cc) and the
// symmetric eigensolver (symmetric_eigen.cc) (internal).
//
// The kernels are marked EVOKIT_KERNEL_TARGETS (kernel_targets.h): compiled
// for SSE2, AVX2 and AVX-512, picked at load time. None uses FMA and
// vectorisation never reorders a sum, so all give the same bits.
#pragma once

#include <cstddef>

namespace evokit::detail {

// Coordinates per work item of the threaded loops (fixed: never depends on
// the thread count).
constexpr std::size_t kRowBlock = 64;
// Work (multiply-adds) below which a loop runs on one thread: a parallel
// region costs microseconds (more when workers have gone to sleep), so
// threads are used for loops of about 100 microseconds or more.
constexpr double kParallelWork = 262144.0;
// The same for loops of matmul (about 40 G multiply-adds per second on one
// AVX-512 core: 2^22 of them take about 100 microseconds).
constexpr double kParallelMatmulWork = 4194304.0;

// o[t] = (((o[t] + a0 b0[t]) + a1 b1[t]) + a2 b2[t]) + a3 b3[t]: four
// axpys in one pass over o, each sum in the order of four separate ones.
void axpy_4x(double* __restrict o, std::size_t len, double a0, const double* __restrict b0, double a1,
             const double* __restrict b1, double a2, const double* __restrict b2, double a3,
             const double* __restrict b3) noexcept;

// o[t] += b[t] * a.
void axpy1(const double* __restrict b, std::size_t len, double a, double* __restrict o) noexcept;

// sum_t a[t] b[t] in four interleaved partial sums s_u (t = u mod 4),
// returned as (s0 + s1) + (s2 + s3): a fixed order on every instruction set.
double dot4(const double* __restrict a, const double* __restrict b, std::size_t len) noexcept;

// out[r] = dot4(a + r * lda, x, len) for r < rows, the same bits, several
// rows at a time.
void dot4_rows(const double* __restrict a, std::size_t lda, std::size_t rows, const double* __restrict x,
               std::size_t len, double* __restrict out) noexcept;

// out[r] = dot4(row row0 + r of b, x, len) for r < rows, the same bits, with
// b (k x len) given as pack_panels left it (kMatmulPanel columns per panel).
void dot4_rows_packed(const double* __restrict packed, std::size_t k, std::size_t row0, std::size_t rows,
                      const double* __restrict x, std::size_t len, double* __restrict out) noexcept;

// out[r * ostride + t] = sum_{i < m} v[i * vstride + r] q[i * qstride + t]
// for r < rows, t < len: rows of V^T times a block of columns of q. Each
// output is summed over i ascending from 0, as a plain loop would.
void transposed_product(const double* __restrict v, std::size_t vstride, std::size_t rows,
                        const double* __restrict q, std::size_t qstride, std::size_t m, std::size_t len,
                        double* __restrict out, std::size_t ostride) noexcept;

// c[i * ldc + j] = sum_{p < k} a[i * lda + p] b[p * ldb + j] (or c[i * ldc + j] -=
// that sum, if subtract) for i < m, j < n: a general row-major matrix product.
// Each sum runs over p ascending from 0 in one accumulator (a plain loop's
// order) and is then stored or subtracted, so the bits do not depend on the
// register tile that computed an output, on the instruction set or on how
// a caller cuts the outputs into blocks. b is first copied into panels.
void matmul(std::size_t m, std::size_t n, std::size_t k, const double* a, std::size_t lda, const double* b,
            std::size_t ldb, double* c, std::size_t ldc, bool subtract);

// b (k x n, row-major) as panels of kMatmulPanel columns, each k x kMatmulPanel
// row-major and contiguous (the last zero-padded): what matmul_packed reads.
constexpr std::size_t kMatmulPanel = 32;
inline std::size_t packed_size(std::size_t k, std::size_t n) { return k * ((n + kMatmulPanel - 1) / kMatmulPanel) * kMatmulPanel; }
void pack_panels(std::size_t k, std::size_t n, const double* b, std::size_t ldb, double* packed) noexcept;
// The same with row p of b at rows[p].
void pack_rows(std::size_t k, std::size_t n, const double* const* rows, double* packed) noexcept;

// matmul with b already packed (same bits). A k x 32 row-major b (ldb = 32)
// is its own packed form.
void matmul_packed(std::size_t m, std::size_t n, std::size_t k, const double* a, std::size_t lda,
                   const double* packed, double* c, std::size_t ldc, bool subtract) noexcept;
// c[i * ldc + j] = scale c[i * ldc + j] - (the same sum): the bits of
// scaling c first and calling matmul_packed with subtract, in one pass over c.
void matmul_packed_scaled(std::size_t m, std::size_t n, std::size_t k, const double* a, std::size_t lda,
                          const double* packed, double* c, std::size_t ldc, double scale) noexcept;

// Rows of c per work item of matmul_threaded (fixed: never depends on the
// thread count).
constexpr std::size_t kMatmulRows = 64;

// matmul_packed, threaded over blocks of kMatmulRows rows of c when m n k >=
// kParallelMatmulWork (same bits as matmul for any num_threads).
void matmul_threaded(std::size_t m, std::size_t n, std::size_t k, const double* a, std::size_t lda,
                     const double* packed, double* c, std::size_t ldc, bool subtract, int num_threads);

// Whether every a[i], i < count, is finite (vectorised; the same answer on
// every instruction set).
bool all_finite(const double* __restrict a, std::size_t count) noexcept;

}  // namespace evokit::detail

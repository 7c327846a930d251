/* SPDX-License-Identifier: MIT */
/* CMakeLists.txt (REPOSE_SINCOS=AUTO): exits 0 when this CPU has FMA and
 * AVX2, which SLEEF's deterministic FMA family (finz) needs. */
int main(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2") ? 0 : 1;
#else
    return 1;
#endif
}

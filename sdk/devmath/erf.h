/* erf.h — the inverse error function, the inverse normal CDF and the scaled complementary error function, on the
   double primitives of port.h (erf, erfc, exp, log, log1p). */

/* Inverse error function: Giles' single-precision approximation, then Newton steps on erf (on log erfc near +-1,
   where 1 - |y| is exact). Below 2^-27 the cubic term is under half an ulp. */
PK_DM_FN double pk_dm_erf_inv(double y) {
  if (pk_dm_isnan(y) || y < -1.0 || y > 1.0) return PK_DM_NAN;
  if (y == 1.0) return PK_DM_INF;
  if (y == -1.0) return -PK_DM_INF;
  const double ay = pk_dm_fabs(y);
  if (ay < 7.450580596923828e-09) return y * 0.88622692545275801365;
  double w = -pk_dm_log((1.0 - ay) * (1.0 + ay)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = pk_dm_sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * ay;
  if (ay > 0.5) {
    /* Newton on log erfc(x) = log(1 - |y|): on erfc itself the tail converged too slowly (y = 1 - 2^-53 stopped
       ~0.03 short of 5.8636). */
    const double target = pk_dm_log1p(-ay);
    for (int it = 0; it < 60; ++it) {
      const double c = pk_dm_erfc(x);
      const double step = (pk_dm_log(c) - target) / (-1.1283791670955126 * pk_dm_exp(-x * x) / c);
      x -= step;
      if (pk_dm_fabs(step) <= pk_dm_fabs(x) * 1e-17) break;
    }
    return pk_dm_copysign(x, y);
  }
  for (int it = 0; it < 8; ++it) {
    const double step = (pk_dm_erf(x) - ay) / (1.1283791670955126 * pk_dm_exp(-x * x));
    x -= step;
    if (pk_dm_fabs(step) <= pk_dm_fabs(x) * 1e-17) break;
  }
  return pk_dm_copysign(x, y);
}

/* ndtri for 0 < p <= 1/2. For p in [1/4, 1/2] it is -sqrt(2) erf_inv(1 - 2p) with 1 - 2p exact: a Newton step
   there would need Phi(x) - p to better than the ulp of 1/2. Below, Halley steps on erfc (relative accuracy in
   the tail) from that start; below 1e-10 Newton on log Phi; below 1e-200 Newton on log Phi with its asymptotic
   series (erfc underflows there). */
PK_DM_FN double pk_dm_ndtri_low(double p) {
  if (p < 1e-200) {
    const double lp = pk_dm_log(p);
    double x = -pk_dm_sqrt(-2.0 * lp);
    for (int it = 0; it < 20; ++it) {
      const double z = 1.0 / (x * x);
      double term = 1.0, series = 1.0;
      for (int k = 1; k < 12; ++k) {
        term *= -(2 * k - 1) * z;
        series += term;
      }
      const double log_phi = -x * x / 2 - pk_dm_log(-x * 2.5066282746310002) + pk_dm_log(series);
      const double step = (log_phi - lp) / (-x / series);
      x -= step;
      if (pk_dm_fabs(step) < 1e-17 * pk_dm_fabs(x)) break;
    }
    return x;
  }
  double x = -1.4142135623730951 * pk_dm_erf_inv(1.0 - 2.0 * p);
  if (p >= 0.25) return x;
  if (!pk_dm_isfinite(x)) x = -pk_dm_sqrt(-2.0 * pk_dm_log(p));
  if (p < 1e-10) {
    /* Newton on log Phi(x) = log p (4 Halley steps on Phi from the crude start left p = 1.09e-200 2e7 ulps off). */
    const double target = pk_dm_log(p);
    for (int it = 0; it < 60; ++it) {
      const double big = 0.5 * pk_dm_erfc(-x * 0.70710678118654752);
      const double step = (pk_dm_log(big) - target) / (pk_dm_exp(-x * x / 2) * 0.3989422804014327 / big);
      x -= step;
      if (pk_dm_fabs(step) <= pk_dm_fabs(x) * 1e-17) break;
    }
    return x;
  }
  for (int it = 0; it < 8; ++it) {
    const double e = 0.5 * pk_dm_erfc(-x * 0.70710678118654752) - p;
    const double u = e * 2.5066282746310002 * pk_dm_exp(x * x / 2);
    const double step = u / (1.0 + x * u / 2);
    x -= step;
    if (pk_dm_fabs(step) <= pk_dm_fabs(x) * 1e-17) break;
  }
  return x;
}

/* Inverse of the standard normal CDF; the upper half through the exact 1 - p. */
PK_DM_FN double pk_dm_ndtri(double p) {
  if (pk_dm_isnan(p) || p < 0.0 || p > 1.0) return PK_DM_NAN;
  if (p == 0.0) return -PK_DM_INF;
  if (p == 1.0) return PK_DM_INF;
  if (p == 0.5) return 0.0; /* +0: the lower branch's -sqrt(2) erf_inv(0) is -0 */
  return p > 0.5 ? -pk_dm_ndtri_low(1.0 - p) : pk_dm_ndtri_low(p);
}

/* erfcx(x) for x >= 1/2 (inf included). Below 6 Taylor tables around c = 0.75 + 0.5 j, j = 0..10, whose
   coefficients follow from erfcx' = 2 x erfcx - 2/sqrt(pi): (k+1) a_(k+1) = 2 c a_k + 2 a_(k-1), degree 19 on
   |h| <= 1/4 (below 2^-58 relative); the recurrence amplifies its rounding errors by about e^(c/2), harmless (it
   ran in long double) up to c = 5.75 but not beyond, so from 6 on Laplace's continued fraction, 16 terms (below
   2^-58 there). Row j of pk_dm_erfcx_taylor: a_0's low part, then a_1 .. a_19; pk_dm_erfcx_at[j]: a_0's high
   part. Neither needs exp or erfc: erfcx(x) straight from them keeps ~1 ulp where exp(x^2) erfc(x) lost ~4. */
PK_DM_CONST double pk_dm_erfcx_taylor[220] = {
    -0x1.ec2134d851665p-55, -0x1.78cdd551ee51ap-2,  0x1.d90093ae10928p-3,  -0x1.09e77d40e0239p-3,
    0x1.1192f5bd6877dp-4,   -0x1.054d68295b244p-5,  0x1.d43a7c7a661b3p-7,  -0x1.8c97dd4ea4906p-8,
    0x1.3f81897ce8651p-9,   -0x1.ec0cf4e3344b7p-11, 0x1.6b982c1d4a8b1p-12, -0x1.02b1604028f9bp-13,
    0x1.6372355c4ee74p-15,  -0x1.d8bafbae67d48p-17, 0x1.30ecbde8b1a3ep-18, -0x1.7e469e5cf47fp-20,
    0x1.d27f006e87982p-22,  -0x1.157758bc73d53p-23, 0x1.422ca9ea8ace6p-25, -0x1.6d927abd6ed5p-27,
    0x1.4797400f19192p-63,  -0x1.abaacdbfa8b07p-3,  0x1.b56f45eef7e58p-4,  -0x1.9b635ac624ad5p-5,
    0x1.68a25a6641f25p-6,   -0x1.299636d6c5895p-7,  0x1.d1b695aabbf6bp-9,  -0x1.5b8bc94c61d2dp-10,
    0x1.f0fe6fb5fda5fp-12,  -0x1.55c07d22af371p-13, 0x1.c570359a19d27p-15, -0x1.22fc408f50363p-16,
    0x1.6a18bc560a40cp-18,  -0x1.b5bc5ccfd14p-20,   0x1.017d9185d3457p-21, -0x1.274201fbebf3dp-23,
    0x1.4a71e1ce33127p-25,  -0x1.69666fd961de4p-27, 0x1.82adfdf5cf171p-29, -0x1.9528878e6dbbp-31,
    0x1.3b1040eb318c2p-57,  -0x1.0c3d538446447p-3,  0x1.c8d0cef0f810dp-5,  -0x1.6cb52fe48945fp-6,
    0x1.13648a11ffe73p-7,   -0x1.8bf716a8eabedp-9,  0x1.106bd5c04334ap-10, -0x1.6838884ab6b8ap-12,
    0x1.cb4c687e4d0f6p-14,  -0x1.1b2912cd41ca8p-15, 0x1.5273f34452639p-17, -0x1.88fb2fa110b7p-19,
    0x1.bc10267a4834p-21,   -0x1.e91dd5a6518a8p-23, 0x1.06f141264e519p-24, -0x1.144fb82741146p-26,
    0x1.1c1cc12a43b15p-28,  -0x1.1e2406dbca491p-30, 0x1.1a88e04adb027p-32, -0x1.11bcdf8bdbbcap-34,
    -0x1.a8198a8216449p-58, -0x1.6a70d2bb37411p-4,  0x1.0615670e25a7bp-5,  -0x1.6883f9919a179p-7,
    0x1.da595561f7d35p-9,   -0x1.2bd251bb2f026p-10, 0x1.6d7743d3b281bp-12, -0x1.aed7ebc99e2bp-14,
    0x1.ec773cc926262p-16,  -0x1.117a666464d1p-17,  0x1.27af428d212b3p-19, -0x1.37b9a5b17aa4dp-21,
    0x1.40e78e4375d15p-23,  -0x1.42fe841c63604p-25, 0x1.3e37bfe368f4fp-27, -0x1.333166c544fcbp-29,
    0x1.22d7ec28e44dap-31,  -0x1.0e4b30cf90202p-33, 0x1.ed85c99cef0c9p-36, -0x1.baea5133f588bp-38,
    -0x1.bb4e763c64a35p-57, -0x1.0305781330099p-4,  0x1.43b98bac83823p-6,  -0x1.84e9ab30e6ab3p-8,
    0x1.c2c72fd72763ep-10,  -0x1.f99e41ecb0904p-12, 0x1.131bb16125572p-13, -0x1.2312b259675c8p-15,
    0x1.2bfb5b0eb91e4p-17,  -0x1.2da329c48e8d1p-19, 0x1.2856fab1e390ep-21, -0x1.1ccf9b63a9045p-23,
    0x1.0c15ffa3a8fa7p-25,  -0x1.eec74cfbc9145p-28, 0x1.c006ce8511a21p-30, -0x1.8e6bfdde820a7p-32,
    0x1.5c391ff83075cp-34,  -0x1.2b542cf83d997p-36, 0x1.fa6f203015b9cp-39, -0x1.a5de3c4fdec1fp-41,
    -0x1.6a0d91336bdc9p-61, -0x1.82a8522b868a1p-5,  0x1.a7eddc9ee6425p-7,  -0x1.c24b49c47a2c3p-9,
    0x1.d085857a17f36p-11,  -0x1.d25ebba1c48fep-13, 0x1.c882f023814d3p-15, -0x1.b45d025fa24e6p-17,
    0x1.97dd78d735b61p-19,  -0x1.753cab5817b35p-21, 0x1.4ec091fed4a79p-23, -0x1.268c3c48d9f1fp-25,
    0x1.fcf8b01368659p-28,  -0x1.b02379dd602aap-30, 0x1.68d1f94817745p-32, -0x1.287953e3d7b38p-34,
    0x1.dfbd947be0c9cp-37,  -0x1.7e6a94f6a715p-39,  0x1.2c7e30cd48f3p-41,  -0x1.d1bcce8642bbp-44,
    -0x1.fa04a06a33f29p-57, -0x1.2aa6503acda11p-5,  0x1.22f0664f3cbf9p-7,  -0x1.1434ae05873aap-9,
    0x1.fff032a0df893p-12,  -0x1.cfcdea1b1f511p-14, 0x1.9b50d0d260f11p-16, -0x1.65778aad38d7p-18,
    0x1.30c2fb3fee9e1p-20,  -0x1.fe3e32b3cf308p-23, 0x1.a3bee31756621p-25, -0x1.539510e2b4f5fp-27,
    0x1.0e5db35ccc9ecp-29,  -0x1.a7f25261058f2p-32, 0x1.4780836a9b7e9p-34, -0x1.f2d4a726bacedp-37,
    0x1.76b35441cfb66p-39,  -0x1.15bd3c89789dep-41, 0x1.96789aadfb24ep-44, -0x1.25bf001aab6dcp-46,
    -0x1.dc926b221fa47p-57, -0x1.da3953352497p-6,   0x1.9ef71691a552p-8,   -0x1.6373226edf54p-10,
    0x1.2a660fdec045fp-12,  -0x1.eb88e0e8f3af3p-15, 0x1.8d8e597548b43p-17, -0x1.3c0776386690ep-19,
    0x1.ee335ecaddd25p-22,  -0x1.7c568d3d5a79dp-24, 0x1.204ae8b89236p-26,  -0x1.aeb422c16f485p-29,
    0x1.3d3bcc09a5d35p-31,  -0x1.cd02f5fbfb88bp-34, 0x1.4a9c73ecb7c33p-36, -0x1.d4365046457cep-39,
    0x1.477e651d8b638p-41,  -0x1.c4b4c6ecb9edep-44, 0x1.354f7dff3b122p-46, -0x1.a1e61e7e7674cp-49,
    -0x1.d4e9c037b2163p-59, -0x1.81149bc4a104bp-6,  0x1.317c144f8b41ap-8,  -0x1.dc1af883a33bbp-11,
    0x1.6cc10c162562cp-13,  -0x1.12f1743bc55c2p-15, 0x1.9818c0a1cae3bp-18, -0x1.2a625a21e39aep-20,
    0x1.ae1faccc64de7p-23,  -0x1.31c3e03ca8a22p-25, 0x1.acfa101bea58bp-28, -0x1.2913c9baab944p-30,
    0x1.966302f6a32e1p-33,  -0x1.12a2760120f0cp-35, 0x1.6ee4faaa804ap-38,  -0x1.e49de7dcf57e5p-41,
    0x1.3c9ce3fd3a1c2p-43,  -0x1.98fe7cb5a77cp-46,  0x1.064d78af897aap-48, -0x1.48742d1f00c4cp-51,
    0x1.97cf1d947d704p-59,  -0x1.3e981b3b1359p-6,   0x1.cdeae21161625p-9,  -0x1.49d492a39eb4fp-11,
    0x1.d03e19aa114d3p-14,  -0x1.4230e3ccf7b6cp-16, 0x1.b93f4735d7396p-19, -0x1.2a4352ea5fc0ap-21,
    0x1.8e375311cc64cp-24,  -0x1.06a3ad84ef11ap-26, 0x1.5669954877242p-29, -0x1.b9619db2f2ff1p-32,
    0x1.195d743ad3994p-34,  -0x1.62e72d08901d4p-37, 0x1.bb0ff3e677128p-40, -0x1.11adaed26ed1bp-42,
    0x1.4f6ff9c9167d2p-45,  -0x1.932eac6cf1664p-48, 0x1.f7d0af27c79c5p-51, -0x1.e8c83fdd389f7p-54,
    -0x1.060a6f657761dp-59, -0x1.0bc46cdc18fe6p-6,  0x1.6535040e2c85bp-9,  -0x1.d662fda6d50d1p-12,
    0x1.31dddbe43644cp-14,  -0x1.8900e0bd26e8dp-17, 0x1.f31a325adbc97p-20, -0x1.395be06c51b75p-22,
    0x1.8530fdf9328fp-25,   -0x1.de42539f68eb6p-28, 0x1.22d53f2a60f2p-30,  -0x1.5e2d4a9a205a9p-33,
    0x1.a18765d11209ap-36,  -0x1.ed137074bee8cp-39, 0x1.2098cda9df2f3p-41, -0x1.4dbad046a27b6p-44,
    0x1.85d43fb8d333ep-47,  -0x1.932012a4142dfp-50, 0x1.63d9967c10b4ep-52, 0x1.6d2acfc442d14p-55,
};
PK_DM_CONST double pk_dm_erfcx_at[11] = {
    0x1.038d54ea3d834p-1, 0x1.78a692138767ap-2, 0x1.23cfc2f1dc7ep-2,  0x1.d94446d627932p-3,
    0x1.8c9eb68ff27d7p-3, 0x1.54a7a08d4bb45p-3, 0x1.2a2af19c1493p-3,  0x1.08e62ce8c89adp-3,
    0x1.dc603a3e77e9bp-4, 0x1.b096face146fep-4, 0x1.8c14049cd551ep-4,
};
PK_DM_FN double pk_dm_erfcx_pos(double x) {
  if (x < 6.0) {
    int j = (int)((x - 0.5) * 2.0);
    j = j > 10 ? 10 : (j < 0 ? 0 : j);
    const double h = x - pk_dm_fma((double)j, 0.5, 0.75); /* exact */
    const int row = 20 * j;
    double p = pk_dm_erfcx_taylor[row + 19];
    for (int k = 18; k >= 1; --k) p = pk_dm_fma(p, h, pk_dm_erfcx_taylor[row + k]);
    return pk_dm_erfcx_at[j] + pk_dm_fma(p, h, pk_dm_erfcx_taylor[row]);
  }
  /* erfcx(x) = 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))), evaluated from the tail */
  double t = 0.0;
  for (int k = 16; k >= 1; --k) t = (0.5 * k) / (x + t);
  return 0.56418958354775628695 / (x + t);
}

/* exp(v^2) with the square's rounding error folded in (inf where it overflows). */
PK_DM_FN double pk_dm_exp_square(double v) {
  const double v2 = v * v, v2_err = pk_dm_fma(v, v, -v2), e = pk_dm_exp(v2);
  return e == PK_DM_INF ? e : pk_dm_fma(e, v2_err, e);
}

/* exp(x^2) erfc(x). x >= 1/2: pk_dm_erfcx_pos. |x| < 1/2: exp(x^2) (1 - erf(x)). x <= -1/2:
   2 exp(x^2) - erfcx(-x), no cancellation (the first term is at least 2.5, the second below 0.62); it overflows
   where the function does. */
PK_DM_FN double pk_dm_erfcx(double x) {
  if (pk_dm_isnan(x)) return x;
  const double a = pk_dm_fabs(x);
  if (a <= 0.5) return pk_dm_exp_square(x) * (1.0 - pk_dm_erf(x));
  if (x > 0.0) return pk_dm_erfcx_pos(a);
  return pk_dm_exp_square(a) * 2.0 - pk_dm_erfcx_pos(a);
}

/* mcp-frontend/state/gcra.h — one step of GCRA (the generic cell rate algorithm): with emission
 * interval T = 1000/rate ms and burst b, a call at time t is allowed when
 * max(TAT, t) + T - b*T <= t, and then TAT becomes max(TAT, t) + T. The Redis script in
 * limiter.c does the same on Redis's clock; this one is the local fallback's. */
#ifndef SP_FE_GCRA_H
#define SP_FE_GCRA_H

/* 1 (and tat_ms advanced) when allowed; 0 with retry_after_ms when not. */
int gcra_step(double *tat_ms, double now_ms, double rate, long burst, long *retry_after_ms);

#endif

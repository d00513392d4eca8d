/* common/clock.h — the two clocks snakepit uses: wall time in ms since the Unix epoch (for
 * records, deadlines that cross machines) and a monotonic clock in µs (for durations). */
#ifndef SP_CLOCK_H
#define SP_CLOCK_H
#include <stdint.h>

uint64_t clock_wall_ms(void);
uint64_t clock_wall_us(void);
uint64_t clock_mono_us(void);
uint64_t clock_mono_ms(void);

#endif

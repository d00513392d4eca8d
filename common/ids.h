/* common/ids.h — execution ids: UUIDv7 (RFC 9562 §5.7), 16 bytes on the wire, the canonical
 * 36-character form everywhere a human or JSON sees them. Time-ordered, so Redis zsets and
 * logs sort naturally, and random enough (74 bits) that ids cannot be guessed across tenants. */
#ifndef SP_IDS_H
#define SP_IDS_H
#include <stdint.h>

#define ID_BYTES   16
#define ID_STR_LEN 36

void id_new(uint8_t out[ID_BYTES]);
void id_format(const uint8_t id[ID_BYTES], char out[ID_STR_LEN + 1]);
int  id_parse(const char *s, uint8_t out[ID_BYTES]); /* 0, or -1 when not a canonical UUID */

#endif

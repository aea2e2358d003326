/*
 * A small streaming JSON writer: commas and indentation are tracked here, and
 * strings are escaped (quotes, backslashes, control characters) with invalid
 * UTF-8 replaced by U+FFFD, so any bytes from a trace give valid JSON.
 */
#ifndef WSLSHIM_JSON_WRITER_H
#define WSLSHIM_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json_writer {
    FILE *out;
    int depth;
    bool has_items[JSON_MAX_DEPTH]; /* the container at this depth has an item already */
    bool after_key;                 /* a key was written: the value follows on the same line */
};

void json_init(struct json_writer *w, FILE *out);
void json_begin_object(struct json_writer *w);
void json_end_object(struct json_writer *w);
void json_begin_array(struct json_writer *w);
void json_end_array(struct json_writer *w);
void json_key(struct json_writer *w, const char *key);
void json_string(struct json_writer *w, const char *s);
void json_string_n(struct json_writer *w, const char *s, size_t n);
void json_u64(struct json_writer *w, uint64_t v);
void json_i64(struct json_writer *w, int64_t v);
void json_double(struct json_writer *w, double v);  /* non-finite values as null */
void json_bool(struct json_writer *w, bool v);
void json_null(struct json_writer *w);
/* Ends the document with a newline. */
void json_finish(struct json_writer *w);

/* Writes s as a quoted, escaped JSON string (no layout). */
void json_write_escaped(FILE *out, const char *s, size_t n);

#endif /* WSLSHIM_JSON_WRITER_H */

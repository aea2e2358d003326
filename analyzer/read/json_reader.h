/*
 * A small, strict JSON reader (RFC 8259) for the files wslshim reads back:
 * calibration files written by wslshim-probe, and doctor's probe input.
 *
 * Strict means: one value and nothing but whitespace after it; no comments,
 * no trailing commas, no NaN/Infinity, no leading zeros or '+', no control
 * characters or invalid UTF-8 in strings, no duplicate keys in an object,
 * no "\u0000" (strings are C strings). Nesting is limited to
 * WSL_JSON_MAX_DEPTH, so no input can exhaust the stack.
 *
 * Any input, however broken, gives either a tree or NULL with a one-line
 * reason naming the line and column ("line 3, column 14: expected ':'").
 */
#ifndef WSLSHIM_JSON_READER_H
#define WSLSHIM_JSON_READER_H

#include <stdbool.h>
#include <stddef.h>

#define WSL_JSON_MAX_DEPTH 64

enum wsl_json_type {
    WSL_JSON_NULL,
    WSL_JSON_BOOL,
    WSL_JSON_NUMBER,
    WSL_JSON_STRING,
    WSL_JSON_ARRAY,
    WSL_JSON_OBJECT,
};

struct wsl_json {
    enum wsl_json_type type;
    bool boolean;               /* WSL_JSON_BOOL */
    double number;              /* WSL_JSON_NUMBER: always finite */
    char *string;               /* WSL_JSON_STRING: UTF-8, NUL-terminated */
    size_t count;               /* ARRAY, OBJECT: number of items */
    struct wsl_json *items;     /* ARRAY, OBJECT: the values, in document order */
    char **keys;                /* OBJECT: keys[i] names items[i] */
};

/* Parses len bytes of text. Returns a tree to free with wsl_json_free, or
 * NULL with the reason in err (always NUL-terminated when errlen > 0). */
struct wsl_json *wsl_json_parse(const char *text, size_t len, char *err, size_t errlen);
void wsl_json_free(struct wsl_json *v);

/* The value of key in object v; NULL when v is not an object or lacks key. */
const struct wsl_json *wsl_json_get(const struct wsl_json *v, const char *key);
/* The name of a type, for messages: "null", "boolean", "number"... */
const char *wsl_json_type_name(enum wsl_json_type t);

#endif /* WSLSHIM_JSON_READER_H */

// Typed, non-variadic wrappers over curl_easy_setopt and curl_easy_getinfo for Swift.
#ifndef CCURLSHIM_H
#define CCURLSHIM_H
#include <curl/curl.h>

/// Initialises libcurl once for the process, before any thread uses it.
CURLcode ipc_global_init(void);

/// Sets a long-valued option.
CURLcode ipc_setopt_long(CURL *handle, CURLoption option, long value);

/// Sets a 64-bit size option (the *_LARGE options).
CURLcode ipc_setopt_off(CURL *handle, CURLoption option, curl_off_t value);

/// Sets a string option; libcurl copies the string.
CURLcode ipc_setopt_string(CURL *handle, CURLoption option, const char *value);

/// Sets a pointer option whose memory the caller keeps alive (POSTFIELDS, ERRORBUFFER, *DATA).
CURLcode ipc_setopt_pointer(CURL *handle, CURLoption option, void *value);

/// Sets a header list option (HTTPHEADER); the caller frees the list after the transfer.
CURLcode ipc_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *list);

/// Sets the WRITEFUNCTION or HEADERFUNCTION callback.
CURLcode ipc_setopt_write_callback(CURL *handle, CURLoption option, curl_write_callback callback);

/// Reads a long-valued piece of information (RESPONSE_CODE, NUM_CONNECTS, ...).
CURLcode ipc_getinfo_long(CURL *handle, CURLINFO info, long *value);

#endif

// The libcurl headers, as one module for Swift and the C shim.
#include <curl/curl.h>

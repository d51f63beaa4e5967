// OpenSSL's libcrypto digests and HMAC, used for content hashes and request signing.
#include <openssl/evp.h>
#include <openssl/hmac.h>

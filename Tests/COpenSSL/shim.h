#include <openssl/ssl.h>

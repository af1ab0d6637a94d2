// The slice of OpenSSL 3's libcrypto that BLECrypto uses (Debian package libssl-dev).
// Only OpenSSL 3 provider-era APIs are used (EVP_CIPHER, EVP_MAC, EVP_PKEY with OSSL_PARAM),
// so nothing here pulls in a deprecated function.
#ifndef BLE_CLIBCRYPTO_SHIM_H
#define BLE_CLIBCRYPTO_SHIM_H

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <openssl/rand.h>

// EVP_PKEY_PUBLIC_KEY / EVP_PKEY_KEYPAIR are nested macro expressions that Swift does not
// import; these constants carry the same values.
static const int ble_evp_pkey_public_key = EVP_PKEY_PUBLIC_KEY;
static const int ble_evp_pkey_keypair = EVP_PKEY_KEYPAIR;
static const int ble_nid_p256 = NID_X9_62_prime256v1;

// OSSL_PARAM_BLD keeps the key and string-value pointers it is given until
// OSSL_PARAM_BLD_to_param, and Swift's String-to-char* bridging only lives for one call, so the
// parameter names and values BLECrypto passes live here, in static storage.
static const char *const ble_param_group = OSSL_PKEY_PARAM_GROUP_NAME;      // "group"
static const char *const ble_param_priv = OSSL_PKEY_PARAM_PRIV_KEY;         // "priv"
static const char *const ble_param_pub = OSSL_PKEY_PARAM_PUB_KEY;           // "pub"
static const char *const ble_param_cipher = OSSL_MAC_PARAM_CIPHER;          // "cipher"
static const char *const ble_name_p256 = SN_X9_62_prime256v1;               // "prime256v1"
static const char *const ble_name_aes128cbc = "AES-128-CBC";

#endif

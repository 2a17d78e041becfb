package io.apm.aggregator.store;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;

/**
 * The executors' TLS context for Cassandra from the same PEM files as the Python driver's
 * (APM_STORAGE_TLS_CA, _CERT, _KEY): the JVM reads PEM certificates itself, and a PKCS#8 key
 * ("BEGIN PRIVATE KEY", what openssl writes) is decoded here, so no keystore has to be made.
 */
public final class PemTls {
  private static final String KEY_BEGIN = "-----BEGIN PRIVATE KEY-----";
  private static final String KEY_END = "-----END PRIVATE KEY-----";

  private PemTls() {}

  /**
   * A context trusting the CA bundle {@code ca} (null or blank: the JVM's default roots), with
   * the client certificate {@code cert} and its key {@code key} when both are given.
   */
  public static SSLContext context(String ca, String cert, String key) {
    try {
      TrustManager[] trust = null;
      if (ca != null && !ca.isBlank()) {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        List<Certificate> roots = certificates(ca);
        for (int i = 0; i < roots.size(); i++) {
          store.setCertificateEntry("ca-" + i, roots.get(i));
        }
        TrustManagerFactory factory =
            TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        factory.init(store);
        trust = factory.getTrustManagers();
      }
      KeyManager[] keys = null;
      if (cert != null && !cert.isBlank() && key != null && !key.isBlank()) {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        char[] none = new char[0];
        store.setKeyEntry(
            "client", privateKey(key), none, certificates(cert).toArray(new Certificate[0]));
        KeyManagerFactory factory =
            KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        factory.init(store, none);
        keys = factory.getKeyManagers();
      }
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(keys, trust, null);
      return context;
    } catch (GeneralSecurityException | IOException e) {
      throw new IllegalArgumentException("Cassandra TLS: " + e.getMessage(), e);
    }
  }

  static List<Certificate> certificates(String path) throws IOException, GeneralSecurityException {
    try (InputStream in = Files.newInputStream(Path.of(path))) {
      List<Certificate> out = new ArrayList<>(CertificateFactory.getInstance("X.509").generateCertificates(in));
      if (out.isEmpty()) {
        throw new IllegalArgumentException(path + ": no PEM certificate in it");
      }
      return out;
    }
  }

  static PrivateKey privateKey(String path) throws IOException, GeneralSecurityException {
    String text = Files.readString(Path.of(path), StandardCharsets.US_ASCII);
    int begin = text.indexOf(KEY_BEGIN);
    int end = text.indexOf(KEY_END);
    if (begin < 0 || end < begin) {
      throw new IllegalArgumentException(
          path + ": not a PKCS#8 PEM key (no 'BEGIN PRIVATE KEY' block; convert it with "
              + "openssl pkcs8 -topk8 -nocrypt)");
    }
    byte[] der = Base64.getMimeDecoder().decode(text.substring(begin + KEY_BEGIN.length(), end));
    PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der);
    for (String algorithm : new String[] {"EC", "RSA", "Ed25519", "Ed448"}) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(spec);
      } catch (GeneralSecurityException e) {
        // not this algorithm: try the next
      }
    }
    throw new IllegalArgumentException(path + ": a PKCS#8 key of no supported algorithm (EC, RSA, EdDSA)");
  }
}

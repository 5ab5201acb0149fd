{
  "targets": [
    {
      "target_name": "nanopay_pow",
      "sources": ["native/addon.c"],
      "cflags": ["-O3", "-march=native", "-std=c11"],
      "cflags!": ["-O2"],
      "xcode_settings": { "OTHER_CFLAGS": ["-O3", "-march=native"] }
    }
  ]
}

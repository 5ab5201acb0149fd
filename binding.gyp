{
  "variables": {
    "pow_cflags": ["-O3", "-std=c11", "-fPIC"]
  },
  "targets": [
    {
      "target_name": "nanopay_pow",
      "sources": ["native/addon.c"],
      "cflags": ["<@(pow_cflags)"],
      "cflags!": ["-O2"],
      "xcode_settings": { "OTHER_CFLAGS": ["-O3"] },
      "dependencies": ["pow_baseline", "pow_baseline_4"],
      "conditions": [
        ["target_arch=='x64'", { "defines": ["POW_X86_VARIANTS"], "dependencies": ["pow_avx2", "pow_avx2_4", "pow_avx512", "pow_avx512_16"] }]
      ]
    },
    {
      "target_name": "pow_baseline",
      "type": "static_library",
      "sources": ["native/pow_variant.c"],
      "defines": ["POW_VARIANT=pow_search_baseline"],
      "cflags": ["<@(pow_cflags)"],
      "cflags!": ["-O2"],
      "xcode_settings": { "OTHER_CFLAGS": ["-O3"] }
    },
    {
      "target_name": "pow_baseline_4",
      "type": "static_library",
      "sources": ["native/pow_variant.c"],
      "defines": ["POW_VARIANT=pow_search_baseline_4", "POW_LANES=4"],
      "cflags": ["<@(pow_cflags)"],
      "cflags!": ["-O2"],
      "xcode_settings": { "OTHER_CFLAGS": ["-O3"] }
    }
  ],
  "conditions": [
    ["target_arch=='x64'", {
      "targets": [
        {
          "target_name": "pow_avx2",
          "type": "static_library",
          "sources": ["native/pow_variant.c"],
          "defines": ["POW_VARIANT=pow_search_avx2"],
          "cflags": ["<@(pow_cflags)", "-march=x86-64-v3"],
          "cflags!": ["-O2"],
          "xcode_settings": { "OTHER_CFLAGS": ["-O3", "-march=x86-64-v3"] }
        },
        {
          "target_name": "pow_avx2_4",
          "type": "static_library",
          "sources": ["native/pow_variant.c"],
          "defines": ["POW_VARIANT=pow_search_avx2_4", "POW_LANES=4"],
          "cflags": ["<@(pow_cflags)", "-march=x86-64-v3"],
          "cflags!": ["-O2"],
          "xcode_settings": { "OTHER_CFLAGS": ["-O3", "-march=x86-64-v3"] }
        },
        {
          "target_name": "pow_avx512",
          "type": "static_library",
          "sources": ["native/pow_variant.c"],
          "defines": ["POW_VARIANT=pow_search_avx512"],
          "cflags": ["<@(pow_cflags)", "-march=x86-64-v4"],
          "cflags!": ["-O2"],
          "xcode_settings": { "OTHER_CFLAGS": ["-O3", "-march=x86-64-v4"] }
        },
        {
          "target_name": "pow_avx512_16",
          "type": "static_library",
          "sources": ["native/pow_variant.c"],
          "defines": ["POW_VARIANT=pow_search_avx512_16", "POW_LANES=16"],
          "cflags": ["<@(pow_cflags)", "-march=x86-64-v4"],
          "cflags!": ["-O2"],
          "xcode_settings": { "OTHER_CFLAGS": ["-O3", "-march=x86-64-v4"] }
        }
      ]
    }]
  ]
}

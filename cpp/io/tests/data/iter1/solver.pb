:"@3d6dd13e862c66f890049c1ef214342dc3c56ea838ebeb79d503f33391084482*î
mè€˜½Ìõ<N­½¥òg=]0¾¶œ<æ‘Î>ß…>{2/¾hŸI># ¾Ç®T=2††½ÈÄ»BÜ[=7Í`¾Á«
¾ /Œ½<—¾X(¸½r>k‡¾¢m<×(ø½d•ø=_¤ï¾I¨?¾î\­>ÿ°¾·¥>fç=³£+>Òq>G‰ë<‚Ø@>{Ûµ>Ø=+Ï>2›ê¾¿‹º¾„ó
=ò¦>i¼G>¢‘¾§Í¢½&|“>ˆŒ;>W<h;>gÿğ=3_P:PW<”T¤¾+¾¿zF=~ŞÏ>F>>b@¸>*î
vè*‡:®
7¶æú9C¨9ùeB;„8sX…<C"İ;ÕÕ?;Ü~;¤E <«Z9İ4â9Çr6[—9ì;ú]ğ:4¤õ9ó<¶õS:“ó:Bèã;£dÑ7ŞqÀ:^Á:v³<I“e;îÖ;<ÀÌC</*<í1Ö8Š8;—ã;D]­8_nh;¥²N<F9§‹;{ÿ«<>~Y<ÿVñ8’K,<HVy;/ÙÑ:P§%:pò<ŸÖ[;„Š7J[;Gµ:œ®‡3~²8•Æ(<^AÜ<#92‡<45;-T<2‰solver {
  type: BASIC_ES
  optimizer {
    type: ADAM
    base_lr: 0.05
    adam {
      beta1: 0.9
      beta2: 0.999
      epsilon: 1e-08
    }
  }
  sampling {
    type: GAUSSIAN_SAMPLING
    gaussian_sampling {
      std: 0.1
      cached: true
      seed: 1024
      cache_size: 10000
    }
  }
  population_size: 4
  antithetic: true
  fitness_shaping: CENTERED_RANK
  num_threads: 1
}
:@fa0bd4ad97d8feb20c7167794f49426f0e6f7ed39ceb01a3fd84952043cb1053X`
// GENERATED FILE - DO NOT EDIT.
// Regenerate with: python3 scripts/generate-assigned-numbers.py DATA_DIR
//
// Data: Bluetooth assigned numbers (service, characteristic and descriptor UUIDs, company
// identifiers, appearance values) from the Bluetooth numbers database.
// Source: NordicSemiconductor/bluetooth-numbers-database, v1/ at commit 5387e83bccbf748c2df2c9f897e2260405832688
//
// The data is distributed under the following licence, reproduced as it requires:
//
// Copyright (c) 2019 - 2020, Nordic Semiconductor ASA
// All rights reserved.
//
// Redistribution and use in source and binary forms, with or without modification, are permitted provided that the following conditions are met:
//
// 1. Redistributions of source code must retain the above copyright notice, this list of conditions and the following disclaimer.
//
// 2. Redistributions in binary form must reproduce the above copyright notice, this list of conditions and the following disclaimer in the documentation and/or other materials provided with the distribution.
//
// 3. Neither the name of Nordic Semiconductor ASA nor the names of its contributors may be used to endorse or promote products derived from this software without specific prior written permission.
//
// THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY, AND FITNESS FOR A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL NORDIC SEMICONDUCTOR ASA OR CONTRIBUTORS BELIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.

extension AssignedNumbers {
    /// Service UUIDs: UUID, tab, name. 125 entries.
    static let serviceTable: String = #"""
1800	Generic Access
1801	Generic Attribute
1802	Immediate Alert
1803	Link Loss
1804	Tx Power
1805	Current Time Service
1806	Reference Time Update Service
1807	Next DST Change Service
1808	Glucose
1809	Health Thermometer
180A	Device Information
180D	Heart Rate
180E	Phone Alert Status Service
180F	Battery Service
1810	Blood Pressure
1811	Alert Notification Service
1812	Human Interface Device
1813	Scan Parameters
1814	Running Speed and Cadence
1815	Automation IO
1816	Cycling Speed and Cadence
1818	Cycling Power
1819	Location and Navigation
181A	Environmental Sensing
181B	Body Composition
181C	User Data
181D	Weight Scale
181E	Bond Management Service
181F	Continuous Glucose Monitoring
1820	Internet Protocol Support Service
1821	Indoor Positioning
1822	Pulse Oximeter Service
1823	HTTP Proxy
1824	Transport Discovery
1825	Object Transfer Service
1826	Fitness Machine
1827	Mesh Provisioning Service
1828	Mesh Proxy Service
1829	Reconnection Configuration
183A	Insulin Delivery
183B	Binary Sensor
183C	Emergency Configuration
183E	Physical Activity Monitor
1843	Audio Input Control
1844	Volume Control
1845	Volume Offset Control
1846	Coordinated Set Identification
1847	Device Time
1848	Media Control
1849	Generic Media Control
184A	Constant Tone Extension
184B	Telephone Bearer
184C	Generic Telephone Bearer
184D	Microphone Control
184E	Audio Stream Control
184F	Broadcast Audio Scan
1850	Published Audio Capabilities
1851	Basic Audio Announcement
1852	Broadcast Audio Announcement
1853	Common Audio
1854	Hearing Access
1855	Telephony and Media Audio
1856	Public Broadcast Announcement
1857	Electronic Shelf Label
1858	Gaming Audio
1859	Mesh Proxy Solicitation
FD0D	Blecon Advertising Service
FD6F	Exposure Notification Service
FE0F	Signify Netherlands B.V. (formerly Philips Lighting) Service
FE2C	Fast Pair Service
FE59	Secure DFU Service
FEAA	Eddystone
FEBB	File Transfer Service by Adafruit
00001523-1212-EFDE-1523-785FEABCD123	Nordic LED and Button Service
00001530-1212-EFDE-1523-785FEABCD123	Legacy DFU Service
00001623-1212-EFDE-1623-785FEABCD123	LEGO® Wireless Protocol v3 Hub Service
00001625-1212-EFDE-1623-785FEABCD123	LEGO® Wireless Protocol v3 Bootloader Service
0483DADD-6C9D-6CA9-5D41-03AD4FFF4ABB	Nordic Throughput Service
0FDA92B2-44A2-4AF2-84F5-FA682BAA2B8D	Helium Hotspot Custom Service
14387800-130C-49E7-B877-2881C89CB258	Nordic Wi-Fi Provisioning Service
21490000-494A-4573-98AF-F126AF76F490	Nordic Direction and Distance Finding Service
54220000-F6A5-4007-A371-722F4EBD8436	Memfault Diagnostic Service
57A70000-9350-11ED-A1EB-0242AC120002	Nordic Status Message Service
6E400001-B5A3-F393-E0A9-E50E24DCCA9E	Nordic UART Service
7905F431-B5CE-4E99-A40F-4B1E122D00D0	Apple Notification Center Service
7DFC6000-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Service
7DFC7000-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Service
7DFC8000-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Service
7DFC9000-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Service
89D3502B-0F36-433A-8EF4-C502AD55F8DC	Apple Media Service
8D53DC1D-1DB7-4CD3-868B-8A527460AA84	SMP Service
8E400001-F315-4F60-9FB8-838830DAEA50	Experimental Buttonless DFU Service
932C32BD-0000-47A2-835A-A8D455B859DD	Philips Hue Light Control Service
A3C87500-8ED3-4BDF-8A39-A01BEBEDE295	Eddystone Configuration Service
A5B46352-9D13-479F-9FCB-3DCDF0A13F4D	Thingy Sensor Hub
ADAF0100-C332-42A8-93BD-25E905756CB8	Adafruit Temperature Service
ADAF0200-C332-42A8-93BD-25E905756CB8	Adafruit Accelerometer Service
ADAF0300-C332-42A8-93BD-25E905756CB8	Adafruit Light Service
ADAF0400-C332-42A8-93BD-25E905756CB8	Adafruit Gyroscope Service
ADAF0500-C332-42A8-93BD-25E905756CB8	Adafruit Magnetometer Service
ADAF0600-C332-42A8-93BD-25E905756CB8	Adafruit Button Service
ADAF0700-C332-42A8-93BD-25E905756CB8	Adafruit Humidity Service
ADAF0800-C332-42A8-93BD-25E905756CB8	Adafruit Barometric Service
ADAF0900-C332-42A8-93BD-25E905756CB8	Adafruit Addressable Service
ADAF0A00-C332-42A8-93BD-25E905756CB8	Adafruit Color Service
ADAF0B00-C332-42A8-93BD-25E905756CB8	Adafruit Sound Service
ADAF0C00-C332-42A8-93BD-25E905756CB8	Adafruit Tone Service
ADAF0D00-C332-42A8-93BD-25E905756CB8	Adafruit Quaternion Service
ADAF0E00-C332-42A8-93BD-25E905756CB8	Adafruit Proximity Service
B8843ADD-0000-4AA1-8794-C3F462030BDA	Philips Hue Light Update Service
E2A00001-EC31-4EC3-A97A-1C34D87E9878	Edge Impulse Remote Management Service
E95D0753-251D-470A-A062-FA1922DFA9A8	micro:bit Accelerometer Service
E95D127B-251D-470A-A062-FA1922DFA9A8	micro:bit IO Pin Service
E95D6100-251D-470A-A062-FA1922DFA9A8	micro:bit Temperature Service
E95D93AF-251D-470A-A062-FA1922DFA9A8	micro:bit Event Service
E95D93B0-251D-470A-A062-FA1922DFA9A8	micro:bit DFU Control Service
E95D9882-251D-470A-A062-FA1922DFA9A8	micro:bit Button Service
E95DD91D-251D-470A-A062-FA1922DFA9A8	micro:bit LED Service
E95DF2D8-251D-470A-A062-FA1922DFA9A8	micro:bit Magnetometer Service
EF680100-9B35-4933-9B10-52FFA9740042	Thingy Configuration Service
EF680200-9B35-4933-9B10-52FFA9740042	Thingy Weather Station Service
EF680300-9B35-4933-9B10-52FFA9740042	Thingy UI Service
EF680400-9B35-4933-9B10-52FFA9740042	Thingy Motion Service
EF680500-9B35-4933-9B10-52FFA9740042	Thingy Sound Service
F000FFC0-0451-4000-B000-000000000000	Texas Instruments Over-the-Air Download (OAD) Service
"""#

    /// Characteristic UUIDs: UUID, tab, name. 662 entries.
    static let characteristicTable: String = #"""
1233	Deprecated Fast Pair Model ID
1234	Deprecated Fast Pair Key-based Pairing
1235	Deprecated Fast Pair Passkey
1236	Deprecated Fast Pair Account Key
1237	Deprecated Fast Pair Data
1524	Throughput Characteristic
2A00	Device Name
2A01	Appearance
2A02	Peripheral Privacy Flag
2A03	Reconnection Address
2A04	Peripheral Preferred Connection Parameters
2A05	Service Changed
2A06	Alert Level
2A07	Tx Power Level
2A08	Date Time
2A09	Day of Week
2A0A	Day Date Time
2A0B	Exact Time 100
2A0C	Exact Time 256
2A0D	DST Offset
2A0E	Time Zone
2A0F	Local Time Information
2A10	Secondary Time Zone
2A11	Time with DST
2A12	Time Accuracy
2A13	Time Source
2A14	Reference Time Information
2A15	Time Broadcast
2A16	Time Update Control Point
2A17	Time Update State
2A18	Glucose Measurement
2A19	Battery Level
2A1A	Battery Power State
2A1B	Battery Level State
2A1C	Temperature Measurement
2A1D	Temperature Type
2A1E	Intermediate Temperature
2A1F	Temperature Celsius
2A20	Temperature Fahrenheit
2A21	Measurement Interval
2A22	Boot Keyboard Input Report
2A23	System ID
2A24	Model Number String
2A25	Serial Number String
2A26	Firmware Revision String
2A27	Hardware Revision String
2A28	Software Revision String
2A29	Manufacturer Name String
2A2A	IEEE 11073-20601 Regulatory Certification Data List
2A2B	Current Time
2A2C	Magnetic Declination
2A2F	Position 2D
2A30	Position 3D
2A31	Scan Refresh
2A32	Boot Keyboard Output Report
2A33	Boot Mouse Input Report
2A34	Glucose Measurement Context
2A35	Blood Pressure Measurement
2A36	Intermediate Cuff Pressure
2A37	Heart Rate Measurement
2A38	Body Sensor Location
2A39	Heart Rate Control Point
2A3A	Removable
2A3B	Service Required
2A3C	Scientific Temperature Celsius
2A3D	String
2A3E	Network Availability
2A3F	Alert Status
2A40	Ringer Control point
2A41	Ringer Setting
2A42	Alert Category ID Bit Mask
2A43	Alert Category ID
2A44	Alert Notification Control Point
2A45	Unread Alert Status
2A46	New Alert
2A47	Supported New Alert Category
2A48	Supported Unread Alert Category
2A49	Blood Pressure Feature
2A4A	HID Information
2A4B	Report Map
2A4C	HID Control Point
2A4D	Report
2A4E	Protocol Mode
2A4F	Scan Interval Window
2A50	PnP ID
2A51	Glucose Feature
2A52	Record Access Control Point
2A53	RSC Measurement
2A54	RSC Feature
2A55	SC Control Point
2A56	Digital
2A57	Digital Output
2A58	Analog
2A59	Analog Output
2A5A	Aggregate
2A5B	CSC Measurement
2A5C	CSC Feature
2A5D	Sensor Location
2A5E	PLX Spot-Check Measurement
2A5F	PLX Continuous Measurement Characteristic
2A60	PLX Features
2A62	Pulse Oximetry Control Point
2A63	Cycling Power Measurement
2A64	Cycling Power Vector
2A65	Cycling Power Feature
2A66	Cycling Power Control Point
2A67	Location and Speed Characteristic
2A68	Navigation
2A69	Position Quality
2A6A	LN Feature
2A6B	LN Control Point
2A6C	Elevation
2A6D	Pressure
2A6E	Temperature
2A6F	Humidity
2A70	True Wind Speed
2A71	True Wind Direction
2A72	Apparent Wind Speed
2A73	Apparent Wind Direction
2A74	Gust Factor
2A75	Pollen Concentration
2A76	UV Index
2A77	Irradiance
2A78	Rainfall
2A79	Wind Chill
2A7A	Heat Index
2A7B	Dew Point
2A7D	Descriptor Value Changed
2A7E	Aerobic Heart Rate Lower Limit
2A7F	Aerobic Threshold
2A80	Age
2A81	Anaerobic Heart Rate Lower Limit
2A82	Anaerobic Heart Rate Upper Limit
2A83	Anaerobic Threshold
2A84	Aerobic Heart Rate Upper Limit
2A85	Date of Birth
2A86	Date of Threshold Assessment
2A87	Email Address
2A88	Fat Burn Heart Rate Lower Limit
2A89	Fat Burn Heart Rate Upper Limit
2A8A	First Name
2A8B	Five Zone Heart Rate Limits
2A8C	Gender
2A8D	Heart Rate Max
2A8E	Height
2A8F	Hip Circumference
2A90	Last Name
2A91	Maximum Recommended Heart Rate
2A92	Resting Heart Rate
2A93	Sport Type for Aerobic and Anaerobic Thresholds
2A94	Three Zone Heart Rate Limits
2A95	Two Zone Heart Rate Limit
2A96	VO2 Max
2A97	Waist Circumference
2A98	Weight
2A99	Database Change Increment
2A9A	User Index
2A9B	Body Composition Feature
2A9C	Body Composition Measurement
2A9D	Weight Measurement
2A9E	Weight Scale Feature
2A9F	User Control Point
2AA0	Magnetic Flux Density - 2D
2AA1	Magnetic Flux Density - 3D
2AA2	Language
2AA3	Barometric Pressure Trend
2AA4	Bond Management Control Point
2AA5	Bond Management Features
2AA6	Central Address Resolution
2AA7	CGM Measurement
2AA8	CGM Feature
2AA9	CGM Status
2AAA	CGM Session Start Time
2AAB	CGM Session Run Time
2AAC	CGM Specific Ops Control Point
2AAD	Indoor Positioning Configuration
2AAE	Latitude
2AAF	Longitude
2AB0	Local North Coordinate
2AB1	Local East Coordinate
2AB2	Floor Number
2AB3	Altitude
2AB4	Uncertainty
2AB5	Location Name
2AB6	URI
2AB7	HTTP Headers
2AB8	HTTP Status Code
2AB9	HTTP Entity Body
2ABA	HTTP Control Point
2ABB	HTTPS Security
2ABC	TDS Control Point
2ABD	OTS Feature
2ABE	Object Name
2ABF	Object Type
2AC0	Object Size
2AC1	Object First-Created
2AC2	Object Last-Modified
2AC3	Object ID
2AC4	Object Properties
2AC5	Object Action Control Point
2AC6	Object List Control Point
2AC7	Object List Filter
2AC8	Object Changed
2AC9	Resolvable Private Address Only
2ACC	Fitness Machine Feature
2ACD	Treadmill Data
2ACE	Cross Trainer Data
2ACF	Step Climber Data
2AD0	Stair Climber Data
2AD1	Rower Data
2AD2	Indoor Bike Data
2AD3	Training Status
2AD4	Supported Speed Range
2AD5	Supported Inclination Range
2AD6	Supported Resistance Level Range
2AD7	Supported Heart Rate Range
2AD8	Supported Power Range
2AD9	Fitness Machine Control Point
2ADA	Fitness Machine Status
2ADB	Mesh Provisioning Data In
2ADC	Mesh Provisioning Data Out
2ADD	Mesh Proxy Data In
2ADE	Mesh Proxy Data Out
2AE0	Average Current
2AE1	Average Voltage
2AE2	Boolean
2AE3	Chromatic Distance From Planckian
2AE4	Chromaticity Coordinates
2AE5	Chromaticity In CCT And Duv Values
2AE6	Chromaticity Tolerance
2AE7	CIE 13.3-1995 Color Rendering Index
2AE8	Coefficient
2AE9	Correlated Color Temperature
2AEA	Count 16
2AEB	Count 24
2AEC	Country Code
2AED	Date UTC
2AEE	Electric Current
2AEF	Electric Current Range
2AF0	Electric Current Specification
2AF1	Electric Current Statistics
2AF2	Energy
2AF3	Energy In A Period Of Day
2AF4	Event Statistics
2AF5	Fixed String 16
2AF6	Fixed String 24
2AF7	Fixed String 36
2AF8	Fixed String 8
2AF9	Generic Level
2AFA	Global Trade Item Number
2AFB	Illuminance
2AFC	Luminous Efficacy
2AFD	Luminous Energy
2AFE	Luminous Exposure
2AFF	Luminous Flux
2B00	Luminous Flux Range
2B01	Luminous Intensity
2B02	B02 Mass Flow
2B03	Perceived Lightness
2B04	Percentage 8
2B05	Power
2B06	Power Specification
2B07	Relative Runtime In A Current Range
2B08	Relative Runtime In A Generic Level Range
2B09	Relative Value In A Voltage Range
2B0A	Relative Value In An Illuminance Range
2B0B	Relative Value In A Period Of Day
2B0C	Relative Value In A Temperature Range
2B0D	Temperature 8
2B0E	Temperature 8 In A Period Of Day
2B0F	Temperature 8 Statistics
2B10	Temperature Range
2B11	Temperature Statistics
2B12	Time Decihour 8
2B13	Time Exponential 8
2B14	Time Hour 24
2B15	Time Millisecond 24
2B16	Time Second 16
2B17	Time Second 8
2B18	Voltage
2B19	Voltage Specification
2B1A	Voltage Statistics
2B1B	Volume Flow
2B1C	Chromaticity Coordinate
2B1D	RC Feature
2B1E	RC Settings
2B1F	Reconnection Configuration Control Point
2B20	IDD Status Changed
2B21	IDD Status
2B22	IDD Annunciation Status
2B23	IDD Features
2B24	IDD Status Reader Control Point
2B25	IDD Command Control Point
2B26	IDD Command Data
2B27	IDD Record Access Control Point
2B28	IDD History Data
2B29	Client Supported Features
2B2A	Database Hash
2B2B	BSS Control Point
2B2C	BSS Response
2B2D	Emergency ID
2B2E	Emergency Text
2B34	Enhanced Blood Pressure Measurement
2B35	Enhanced Intermediate Cuff Pressure
2B36	Blood Pressure Record
2B38	BR-EDR Handover Data
2B39	Bluetooth SIG Data
2B3A	Server Supported Features
2B3B	Physical Activity Monitor Features
2B3C	General Activity Instantaneous Data
2B3D	General Activity Summary Data
2B3E	CardioRespiratory Activity Instantaneous Data
2B3F	CardioRespiratory Activity Summary Data
2B40	Step Counter Activity Summary Data
2B41	Sleep Activity Instantaneous Data
2B42	Sleep Activity Summary Data
2B43	Physical Activity Monitor Control Point
2B44	Activity Current Session
2B45	Physical Activity Session Descriptor
2B46	Preferred Units
2B47	High Resolution Height
2B48	Middle Name
2B49	Stride Length
2B4A	Handedness
2B4B	Device Wearing Position
2B4C	Four Zone Heart Rate Limits
2B4D	High Intensity Exercise Threshold
2B4E	Activity Goal
2B4F	Sedentary Interval Notification
2B50	Caloric Intake
2B51	TMAP Role
2B77	Audio Input State
2B78	Gain Settings Attribute
2B79	Audio Input Type
2B7A	Audio Input Status
2B7B	Audio Input Control Point
2B7C	Audio Input Description
2B7D	Volume State
2B7E	Volume Control Point
2B7F	Volume Flags
2B80	Volume Offset State
2B81	Audio Location
2B82	Volume Offset Control Point
2B83	Audio Output Description
2B84	Set Identity Resolving Key
2B85	Coordinated Set Size
2B86	Set Member Lock
2B87	Set Member Rank
2B8C	Carbon Dioxide Concentration
2B8E	Device Time Feature
2B8F	Device Time Parameters
2B90	Device Time
2B91	Device Time Control Point
2B92	Time Change Log Data
2B93	Media Player Name
2B94	Media Player Icon Object ID
2B95	Media Player Icon URL
2B96	Track Changed
2B97	Track Title
2B98	Track Duration
2B99	Track Position
2B9A	Playback Speed
2B9B	Seeking Speed
2B9C	Current Track Segments Object ID
2B9D	Current Track Object ID
2B9E	Next Track Object ID
2B9F	Parent Group Object ID
2BA0	Current Group Object ID
2BA1	Playing Order
2BA2	Playing Orders Supported
2BA3	Media State
2BA4	Media Control Point
2BA5	Media Control Point Opcodes Supported
2BA6	Search Results Object ID
2BA7	Search Control Point
2BA9	Media Player Icon Object Type
2BAA	Track Segments Object Type
2BAB	Track Object Type
2BAC	Group Object Type
2BAD	Constant Tone Extension Enable
2BAE	Advertising Constant Tone Extension Minimum Length
2BAF	Advertising Constant Tone Extension Minimum Transmit Count
2BB0	Advertising Constant Tone Extension Transmit Duration
2BB1	Advertising Constant Tone Extension Interval
2BB2	Advertising Constant Tone Extension PHY
2BB3	Bearer Provider Name
2BB4	Bearer UCI
2BB5	Bearer Technology
2BB6	Bearer URI Schemes Supported List
2BB7	Bearer Signal Strength
2BB8	Bearer Signal Strength Reporting Interval
2BB9	Bearer List Current Calls
2BBA	Content Control ID
2BBB	Status Flags
2BBC	Incoming Call Target Bearer URI
2BBD	Call State
2BBE	Call Control Point
2BBF	Call Control Point Optional Opcodes
2BC0	Termination Reason
2BC1	Incoming Call
2BC2	Call Friendly Name
2BC3	Mute
2BC4	Sink ASE
2BC5	Source ASE
2BC6	ASE Control Point
2BC7	Broadcast Audio Scan Control Point
2BC8	Broadcast Receive State
2BC9	Sink PAC
2BCA	Sink Audio Locations
2BCB	Source PAC
2BCC	Source Audio Locations
2BCD	Available Audio Contexts
2BCE	Supported Audio Contexts
2BCF	Ammonia Concentration
2BD0	Carbon Monoxide Concentration
2BD1	Methane Concentration
2BD2	Nitrogen Dioxide Concentration
2BD3	Non-Methane Volatile Organic Compounds Concentration
2BD4	Ozone Concentration
2BD5	Particulate Matter - PM1 Concentration
2BD6	Particulate Matter - PM2.5 Concentration
2BD7	Particulate Matter - PM10 Concentration
2BD8	Sulfur Dioxide Concentration
2BD9	Sulfur Hexafluoride Concentration
2BDA	Hearing Aid Features
2BDB	Hearing Aid Preset Control Point
2BDC	Active Preset Index
2BDD	Stored Health Observations
2BDE	Fixed String 64
2BDF	High Temperature
2BE0	High Voltage
2BE1	Light Distribution
2BE2	Light Output
2BE3	Light Source Type
2BE4	Noise
2BE5	Relative Runtime in a Correlated Color Temperature Range
2BE6	Time Second 32
2BE7	VOC Concentration
2BE8	Voltage Frequency
2BE9	Battery Critical Status
2BEA	Battery Health Status
2BEB	Battery Health Information
2BEC	Battery Information
2BED	Battery Level Status
2BEE	Battery Time Status
2BEF	Estimated Service Date
2BF0	Battery Energy Status
2BF1	Observation Schedule Changed
2BF2	Current Elapsed Time
2BF3	Health Sensor Features
2BF4	GHS Control Point
2BF5	LE GATT Security Levels
2BF6	ESL Address
2BF7	AP Sync Key Material
2BF8	ESL Response Key Material
2BF9	ESL Current Absolute Time
2BFA	ESL Display Information
2BFB	ESL Image Information
2BFC	ESL Sensor Information
2BFD	ESL LED Information
2BFE	ESL Control Point
2BFF	UDI for Medical Devices
2C00	GMAP Role
2C01	UGG Features
2C02	UGT Features
2C03	BGS Features
2C04	BGR Features
2C05	Percentage 8 Steps
00001524-1212-EFDE-1523-785FEABCD123	Blinky Button State
00001525-1212-EFDE-1523-785FEABCD123	Blinky LED State
00001531-1212-EFDE-1523-785FEABCD123	Legacy DFU Control Point
00001532-1212-EFDE-1523-785FEABCD123	Legacy DFU Packet
00001534-1212-EFDE-1523-785FEABCD123	Legacy DFU Version
00001624-1212-EFDE-1623-785FEABCD123	LEGO® Wireless Protocol v3 Hub Characteristic
00001626-1212-EFDE-1623-785FEABCD123	LEGO® Wireless Protocol v3 Bootloader Characteristic
0A852C59-50D3-4492-BFD3-22FE58A24F01	Helium Hotspot Public Key
14387801-130C-49E7-B877-2881C89CB258	Wi-Fi Provisioning Service Version
14387802-130C-49E7-B877-2881C89CB258	Wi-Fi Provisioning Control Point
14387803-130C-49E7-B877-2881C89CB258	Wi-Fi Provisioning Data Out
180EFDEF-7579-4B4A-B2DF-72733B7FA2FE	Helium Hotspot Lights
21490001-494A-4573-98AF-F126AF76F490	Distance Measurement Characteristic
21490002-494A-4573-98AF-F126AF76F490	Azimuth Measurement Characteristic
21490003-494A-4573-98AF-F126AF76F490	Elevation Measurement Characteristic
21490004-494A-4573-98AF-F126AF76F490	DDF Feature
21490005-494A-4573-98AF-F126AF76F490	Control Point
22EAC6E9-24D6-4BB5-BE44-B36ACE7C7BFB	Apple Data Source
2F7CABCE-808D-411F-9A0C-BB92BA96C102	Apple Entity Update
398168AA-0111-4EC0-B1FA-171671270608	Helium Hotspot WiFi Connect
506A55C4-B5E7-46FA-8326-8ACAEB1189EB	Sensor Hub Temperature
51838AFF-2D9A-B32A-B32A-8187E41664BA	Sensor Hub Pressure
54220001-F6A5-4007-A371-722F4EBD8436	MDS Supported Features Characteristic
54220002-F6A5-4007-A371-722F4EBD8436	MDS Device Identifier Characteristic
54220003-F6A5-4007-A371-722F4EBD8436	MDS Device Data URI Characteristic
54220004-F6A5-4007-A371-722F4EBD8436	MDS Device Authorization Characteristic
54220005-F6A5-4007-A371-722F4EBD8436	MDS Device Data Export Characteristic
57A70001-9350-11ED-A1EB-0242AC120002	Status Characteristic
69D1D8F3-45E1-49A8-9821-9BBDFDAAD9D9	Apple Control Point
6E400002-B5A3-F393-E0A9-E50E24DCCA9E	UART RX Characteristic
6E400003-B5A3-F393-E0A9-E50E24DCCA9E	UART TX Characteristic
753E3050-DF06-4B53-B090-5E1D810C4383	Sensor Hub Humidity
7731DE63-BC6A-4100-8AB1-89B2356B038B	Helium Hotspot WiFi SSID
7DFC6001-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6002-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6003-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6004-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6005-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6101-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6102-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6103-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6104-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6105-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6106-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6107-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6108-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6201-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6202-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC6203-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC7004-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC7005-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC7006-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC7007-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC7008-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC7009-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC700A-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC700B-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC700C-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC7103-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC7104-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC7105-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC7106-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC7107-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC7108-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC7109-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC710B-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC710C-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC710D-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC8003-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC8004-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
7DFC9001-7D1C-4951-86AA-8D9728F8D66C	Apple Reserved Characteristic
82754BBB-6ED3-4D69-A0E1-F19F6B654EC2	Sensor Hub Red Color
8CC6E0B3-98C5-40CC-B1D8-692940E6994B	Helium Hotspot WiFi Remove
8E400001-F315-4F60-9FB8-838830DAEA50	Experimental Buttonless DFU
8EC90001-F315-4F60-9FB8-838830DAEA50	DFU Control Point
8EC90002-F315-4F60-9FB8-838830DAEA50	DFU Packet
8EC90003-F315-4F60-9FB8-838830DAEA50	Buttonless DFU Without Bonds
8EC90004-F315-4F60-9FB8-838830DAEA50	Buttonless DFU With Bonds
932C32BD-0002-47A2-835A-A8D455B859DD	Philips Hue Light On/Off Toggle
932C32BD-0003-47A2-835A-A8D455B859DD	Philips Hue Light Brightness Level
932C32BD-0005-47A2-835A-A8D455B859DD	Philips Hue Light Color
9B3C81D8-57B1-4A8A-B8DF-0E56F7CA51C2	Apple Remote Command
9C4314F2-8A0C-45FD-A58D-D4A7E64C3A57	Helium Hotspot WiFi MAC Address
9FBF120D-6301-42D9-8C58-25E699A21DBD	Apple Notification Source
A3C87501-8ED3-4BDF-8A39-A01BEBEDE295	Eddystone Capabilities
A3C87502-8ED3-4BDF-8A39-A01BEBEDE295	Eddystone Active Slot
A3C87503-8ED3-4BDF-8A39-A01BEBEDE295	Eddystone Advertising Interval
A3C87504-8ED3-4BDF-8A39-A01BEBEDE295	Eddystone Radio Tx Power
A3C87505-8ED3-4BDF-8A39-A01BEBEDE295	Eddystone (Advanced) Advertised Tx Power
A3C87506-8ED3-4BDF-8A39-A01BEBEDE295	Eddystone Lock State
A3C87507-8ED3-4BDF-8A39-A01BEBEDE295	Eddystone Unlock
A3C87508-8ED3-4BDF-8A39-A01BEBEDE295	Eddystone Public ECDH Key
A3C87509-8ED3-4BDF-8A39-A01BEBEDE295	Eddystone EID Identity Key
A3C8750A-8ED3-4BDF-8A39-A01BEBEDE295	Eddystone ADV Slot Data
A3C8750B-8ED3-4BDF-8A39-A01BEBEDE295	Eddystone Advanced Factory Reset
A3C8750C-8ED3-4BDF-8A39-A01BEBEDE295	Eddystone (Advanced) Remain Connectable
AD79CBCE-65DF-4BC6-BDD4-8CE2B6B75C59	Sensor Hub IAQ
ADAF0001-C332-42A8-93BD-25E905756CB8	Adafruit Sensor Measurement Period
ADAF0002-C332-42A8-93BD-25E905756CB8	Adafruit Sensor Service Version
ADAF0100-4669-6C65-5472-616E73666572	Adafruit Version
ADAF0101-C332-42A8-93BD-25E905756CB8	Adafruit Temperature
ADAF0200-4669-6C65-5472-616E73666572	Adafruit Raw TX/RX
ADAF0201-C332-42A8-93BD-25E905756CB8	Adafruit Acceleration
ADAF0301-C332-42A8-93BD-25E905756CB8	Adafruit Light Level
ADAF0401-C332-42A8-93BD-25E905756CB8	Adafruit Gyro
ADAF0501-C332-42A8-93BD-25E905756CB8	Adafruit Magnetic
ADAF0601-C332-42A8-93BD-25E905756CB8	Adafruit Pressed
ADAF0701-C332-42A8-93BD-25E905756CB8	Adafruit Humidity
ADAF0801-C332-42A8-93BD-25E905756CB8	Adafruit Pressure
ADAF0901-C332-42A8-93BD-25E905756CB8	Adafruit Pixel Pin
ADAF0902-C332-42A8-93BD-25E905756CB8	Adafruit Pixel Pin Type
ADAF0903-C332-42A8-93BD-25E905756CB8	Adafruit Pixel Data
ADAF0904-C332-42A8-93BD-25E905756CB8	Adafruit Pixel Buffer Size
ADAF0A01-C332-42A8-93BD-25E905756CB8	Adafruit Color
ADAF0B01-C332-42A8-93BD-25E905756CB8	Adafruit Sound Samples
ADAF0B02-C332-42A8-93BD-25E905756CB8	Adafruit Number of Channels
ADAF0C01-C332-42A8-93BD-25E905756CB8	Adafruit Tone
ADAF0D01-C332-42A8-93BD-25E905756CB8	Adafruit Quaternions
ADAF0D02-C332-42A8-93BD-25E905756CB8	Adafruit Calibration In
ADAF0D03-C332-42A8-93BD-25E905756CB8	Adafruit Calibration Out
ADAF0E01-C332-42A8-93BD-25E905756CB8	Adafruit Proximity
B833D34F-D871-422C-BF9E-8E6EC117D57E	Helium Hotspot Diagnostics
C6B2F38C-23AB-46D8-A6AB-A3A870BBD5D7	Apple Entity Attribute
D083B2BD-BE16-4600-B397-61512CA2F5AD	Helium Hotspot Onboarding Key
D435F5DE-01A4-4E7D-84BA-DFD347F60275	Helium Hotspot Assert Location
D7515033-7E7B-45BE-803F-C8737B171A29	Helium Hotspot WiFi Services
DA2E7828-FBCE-4E01-AE9E-261174997C48	SMP Characteristic
DB7F9F36-92CE-4509-A2EF-AF72BA38FB48	Sensor Hub Green Color
DF3B16CA-C985-4DA2-A6D2-9B9B9ABDB858	Helium Hotspot Add Gateway
E125BDA4-6FB8-11EA-BC55-0242AC130003	Helium Hotspot WiFi Configured Services
E2A00002-EC31-4EC3-A97A-1C34D87E9878	Edge Impulse Remote Management RX Characteristic
E2A00003-EC31-4EC3-A97A-1C34D87E9878	Edge Impulse Remote Management TX Characteristic
E5866BD6-0288-4476-98CA-EF7DA6B4D289	Helium Hotspot Ethernet Online
E95D0D2D-251D-470A-A062-FA1922DFA9A8	micro:bit Scrolling Delay
E95D1B25-251D-470A-A062-FA1922DFA9A8	micro:bit Temperature Period
E95D23C4-251D-470A-A062-FA1922DFA9A8	micro:bit Client Requirements
E95D386C-251D-470A-A062-FA1922DFA9A8	micro:bit Magnetometer Period
E95D5404-251D-470A-A062-FA1922DFA9A8	micro:bit Client Event
E95D5899-251D-470A-A062-FA1922DFA9A8	micro:bit Pin AD Configuration
E95D7B77-251D-470A-A062-FA1922DFA9A8	micro:bit LED Matrix State
E95D8D00-251D-470A-A062-FA1922DFA9A8	micro:bit Pin Data
E95D9250-251D-470A-A062-FA1922DFA9A8	micro:bit Temperature
E95D93B1-251D-470A-A062-FA1922DFA9A8	micro:bit DFU Control
E95D93EE-251D-470A-A062-FA1922DFA9A8	micro:bit LED Text
E95D9715-251D-470A-A062-FA1922DFA9A8	micro:bit Magnetometer Bearing
E95D9775-251D-470A-A062-FA1922DFA9A8	micro:bit Event
E95DB84C-251D-470A-A062-FA1922DFA9A8	micro:bit Requirements
E95DB9FE-251D-470A-A062-FA1922DFA9A8	micro:bit Pin I/O Configuration
E95DCA4B-251D-470A-A062-FA1922DFA9A8	micro:bit Accelerometer Data
E95DD822-251D-470A-A062-FA1922DFA9A8	micro:bit PWM Control
E95DDA90-251D-470A-A062-FA1922DFA9A8	micro:bit Button A State
E95DDA91-251D-470A-A062-FA1922DFA9A8	micro:bit Button B State
E95DFB11-251D-470A-A062-FA1922DFA9A8	micro:bit Magnetometer Data
E95DFB24-251D-470A-A062-FA1922DFA9A8	micro:bit Accelerometer Period
EF680101-9B35-4933-9B10-52FFA9740042	Thingy Device Name
EF680102-9B35-4933-9B10-52FFA9740042	Thingy Advertising Parameters
EF680104-9B35-4933-9B10-52FFA9740042	Thingy Connection Parameters
EF680105-9B35-4933-9B10-52FFA9740042	Thingy Eddystone URL
EF680106-9B35-4933-9B10-52FFA9740042	Thingy Cloud Token
EF680107-9B35-4933-9B10-52FFA9740042	Thingy FW Version
EF680108-9B35-4933-9B10-52FFA9740042	Thingy MTU Request
EF680201-9B35-4933-9B10-52FFA9740042	Thingy Temperature
EF680202-9B35-4933-9B10-52FFA9740042	Thingy Pressure
EF680203-9B35-4933-9B10-52FFA9740042	Thingy Humidity
EF680204-9B35-4933-9B10-52FFA9740042	Thingy Air Quality
EF680205-9B35-4933-9B10-52FFA9740042	Thingy Color
EF680206-9B35-4933-9B10-52FFA9740042	Thingy Configuration
EF680301-9B35-4933-9B10-52FFA9740042	Thingy LED State
EF680302-9B35-4933-9B10-52FFA9740042	Thingy Button State
EF680303-9B35-4933-9B10-52FFA9740042	Thingy EXT Pin
EF680401-9B35-4933-9B10-52FFA9740042	Thingy Motion Config
EF680402-9B35-4933-9B10-52FFA9740042	Thingy Tap
EF680403-9B35-4933-9B10-52FFA9740042	Thingy Orientation
EF680404-9B35-4933-9B10-52FFA9740042	Thingy Quaternion
EF680405-9B35-4933-9B10-52FFA9740042	Thingy Pedometer
EF680406-9B35-4933-9B10-52FFA9740042	Thingy Raw Data
EF680407-9B35-4933-9B10-52FFA9740042	Thingy Euler
EF680408-9B35-4933-9B10-52FFA9740042	Thingy Rotation Matrix
EF680409-9B35-4933-9B10-52FFA9740042	Thingy Heading
EF68040A-9B35-4933-9B10-52FFA9740042	Thingy Gravity Vector
EF680501-9B35-4933-9B10-52FFA9740042	Thingy Sound Config
EF680502-9B35-4933-9B10-52FFA9740042	Thingy Speaker Data
EF680503-9B35-4933-9B10-52FFA9740042	Thingy Speaker Status
EF680504-9B35-4933-9B10-52FFA9740042	Thingy Microphone
F000FFC1-0451-4000-B000-000000000000	Texas Instruments Image Identify
F000FFC2-0451-4000-B000-000000000000	Texas Instruments Image Block
F000FFC5-0451-4000-B000-000000000000	Texas Instruments OAD Control
F5D2EAB5-41E8-4F7C-AEF7-C9FFF4C544C0	Sensor Hub Blue Color
FA3CF070-D0C7-4668-96C4-86125C8AC5DF	Sensor Hub Battery
FE2C1233-8366-4814-8EB0-01DE32100BEA	Fast Pair Model ID
FE2C1234-8366-4814-8EB0-01DE32100BEA	Fast Pair Key-based Pairing
FE2C1235-8366-4814-8EB0-01DE32100BEA	Fast Pair Passkey
FE2C1236-8366-4814-8EB0-01DE32100BEA	Fast Pair Account Key
FE2C1237-8366-4814-8EB0-01DE32100BEA	Fast Pair Data
"""#

    /// Descriptor UUIDs: UUID, tab, name. 18 entries.
    static let descriptorTable: String = #"""
2900	Characteristic Extended Properties
2901	Characteristic User Descriptor
2902	Client Characteristic Configuration
2903	Server Characteristic Configuration
2904	Characteristic Presentation Format
2905	Characteristic Aggregate Format
2906	Valid Range
2907	External Report Reference
2908	Report Reference
2909	Number of Digitals
290A	Value Trigger Setting
290B	Environmental Sensing Configuration
290C	Environmental Sensing Measurement
290D	Environmental Sensing Trigger Setting
290E	Time Trigger Setting
290F	Complete BR-EDR Transport Block Data
2910	Observation Schedule
2911	Valid Range and Accuracy
"""#
}
